"""The progress figures (``tracking/measure/progress.py``) at a log step of upstream's ``MetricsProcessor``: upstream's
step (which its checkpoint restores, so the counts continue after a resume) times the samples of one step.

Two ways upstream sizes a step, told apart by the fields of its ``training`` section (TorchTitan's main branch
carries the version of its last release, so a version range cannot tell them apart on a source checkout):
- a batch of sequences (0.2.2–0.3): ``training.global_batch_size`` or, when that is left at -1, upstream's
  default: ``local_batch_size`` on each data-parallel rank, no gradient accumulation; ``seq_len`` tokens each;
- a token budget (TorchTitan's main after 0.3): ``num_tokens_per_train_step`` or, at -1, upstream's default,
  ``num_tokens_per_microbatch_per_dp_rank`` × pipeline micro-batches × the data-parallel degree, in sequences of
  ``max_context_length`` token slots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primus.tracking.measure.progress import Progress


class ProcessorProgress:
    def __init__(self, training: Mapping[str, Any], parallelism: Mapping[str, Any] | None = None):
        self._progress = Progress()
        self._steps = int(training["steps"])
        if "seq_len" in training:
            self._seq_len = int(training["seq_len"])
            self._per_step = int(training.get("global_batch_size", -1))
            self._per_dp_rank = int(training["local_batch_size"])
            self._pp_microbatches = 1
        else:
            self._seq_len = int(training["max_context_length"])
            tokens, tokens_per_dp_rank = (
                int(training[k]) for k in ("num_tokens_per_train_step", "num_tokens_per_microbatch_per_dp_rank")
            )
            self._per_step = tokens // self._seq_len if tokens > 0 else -1
            self._per_dp_rank = tokens_per_dp_rank // self._seq_len
            self._pp_microbatches = int((parallelism or {}).get("num_pp_microbatches", 1))

    def figures(self, step: int, now: float, dims: Any) -> dict[str, float]:
        samples = self._per_step
        if samples < 0:
            microbatches = self._pp_microbatches if getattr(dims, "pp_enabled", False) else 1
            samples = self._per_dp_rank * microbatches * dims.dp_replicate * dims.dp_shard
        return self._progress.at(step, step * samples, now, seq_length=self._seq_len, total_steps=self._steps)
