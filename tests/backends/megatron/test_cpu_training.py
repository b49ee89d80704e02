"""Unmodified upstream Megatron trains a tiny GPT on CPU through ``pretrain_gpt.py`` with the CPU
platform patches: one process, and torchrun with DP=2, TP=2 and PP=2. Each test reads the run's log. The one-process,
DP=2 and PP=2 runs are the tracking suite's own (megatron_tracking_runs.py: started once per session), which tracking
leaves training the same."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import result, tb_event_files

from primus.backends.megatron.patches.cpu_patches import CPU_PATCHES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def single_process(megatron_run, mlflow_server):
    # the TensorBoard run: DEBUG, so the entry lists the patch records after training; the memory tags on
    return result(megatron_run, mlflow_server.uri, "tb")


@pytest.fixture(scope="module")
def data_parallel(megatron_run, mlflow_server):
    return result(megatron_run, mlflow_server.uri, "dp2_all")


def test_single_process_trains_without_torchrun(single_process):
    losses = single_process.assert_trained()
    assert losses[-1] < losses[0], single_process.explain()


def test_every_cpu_patch_is_recorded_as_applied(single_process):
    output = single_process.output
    for patch in CPU_PATCHES:
        assert f"primus patch {patch.id}: applied" in output, single_process.explain()


def test_memory_tags_report_host_memory(single_process):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    single_process.assert_trained()
    [logdir] = {path.parent for path in tb_event_files(single_process.log_path.parent)}
    events = EventAccumulator(str(logdir), size_guidance={"scalars": 0}).Reload()
    for tag in ("mem-allocated-bytes", "mem-reserved-bytes", "mem-max-allocated-bytes"):
        values = [event.value for event in events.Scalars(tag)]
        # A process that imported torch and Megatron holds hundreds of MB; upstream's CUDA query gave 0.
        assert len(values) == 3 and min(values) > 100e6, (tag, values)
    peak = [event.value for event in events.Scalars("mem-max-allocated-bytes")]
    current = [event.value for event in events.Scalars("mem-allocated-bytes")]
    assert all(p >= 0.9 * c for p, c in zip(peak, current, strict=True)), (peak, current)


def test_data_parallel_matches_single_process(single_process, data_parallel):
    # Same global batch, no dropout: DP=2 splits the micro-batches over ranks and all-reduces the
    # gradients, so upstream must print the same losses (the research saw them identical).
    assert data_parallel.assert_trained() == pytest.approx(single_process.assert_trained(), rel=1e-5)


def test_tensor_parallel_trains(megatron_run):
    run = megatron_run("tensor-model-parallel-size", "--tensor-model-parallel-size", "2", nproc=2)
    run.assert_trained()


def test_pipeline_parallel_trains(megatron_run, mlflow_server):
    run = result(megatron_run, mlflow_server.uri, "pp2_wandb")
    run.assert_trained()


def test_without_the_patches_upstream_refuses_to_start(megatron_run):
    run = megatron_run("unpatched", env={"PRIMUS_PATCHES": "none"})
    assert run.returncode != 0, run.explain()
    assert "Megatron requires CUDA" in run.output, run.explain()


def test_a_single_process_run_lets_its_store_choose_the_port():
    """No port is picked ahead and bound later (another process starting meanwhile could take it): port 0."""
    from primus.backends.megatron.gpt import default_single_process_env

    environ: dict[str, str] = {}
    default_single_process_env(environ)
    assert environ == {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    given = {"MASTER_PORT": "29511"}
    default_single_process_env(given)
    assert given["MASTER_PORT"] == "29511"
