"""TorchTitan's progress figures from either way upstream sizes a step (backends/torchtitan/step_progress.py):
a batch of sequences (0.2.2–0.3, read back end to end by the tracking tests) and the token budget of TorchTitan's
main branch after 0.3, whose ``training`` section has no ``seq_len`` (the metric logger patch failed on it with
KeyError('seq_len') and was disabled, losing every metric of the run)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from primus.backends.torchtitan.step_progress import ProcessorProgress


def parallel_dims(dp_shard=2, dp_replicate=1, pp_enabled=False):
    return SimpleNamespace(dp_shard=dp_shard, dp_replicate=dp_replicate, pp_enabled=pp_enabled)


def consumed(progress, step=3, **dims):
    figures = progress.figures(step, 100.0, parallel_dims(**dims))
    return figures["progress/consumed_samples"], figures["progress/consumed_tokens"]


def test_a_batch_of_sequences_per_data_parallel_rank():
    training = {"steps": 10, "seq_len": 256, "local_batch_size": 2, "global_batch_size": -1}
    assert consumed(ProcessorProgress(training)) == (3 * 2 * 2, 3 * 2 * 2 * 256)


def test_a_global_batch_of_sequences():
    training = {"steps": 10, "seq_len": 128, "local_batch_size": 2, "global_batch_size": 16}
    assert consumed(ProcessorProgress(training)) == (3 * 16, 3 * 16 * 128)


@pytest.mark.parametrize("pp_enabled, per_step", [(False, 2 * 2), (True, 2 * 4 * 2)], ids=["no-pp", "pp-4-microbatches"])
def test_a_token_budget_per_data_parallel_rank(pp_enabled, per_step):
    training = {"steps": 10, "max_context_length": 256, "num_tokens_per_microbatch_per_dp_rank": 512,
                "num_tokens_per_train_step": -1}
    progress = ProcessorProgress(training, {"num_pp_microbatches": 4})
    assert consumed(progress, pp_enabled=pp_enabled) == (3 * per_step, 3 * per_step * 256)


def test_a_token_budget_per_step():
    training = {"steps": 10, "max_context_length": 256, "num_tokens_per_microbatch_per_dp_rank": 512,
                "num_tokens_per_train_step": 4096}
    assert consumed(ProcessorProgress(training)) == (3 * 16, 3 * 4096)
