"""The progress figures (``tracking/progress.py``) at a log step of upstream's ``MetricsProcessor``: upstream's
step (which its checkpoint restores, so the counts continue after a resume) times the global batch, which is the
run's ``training.global_batch_size`` or, when that is left at -1, upstream's default: ``local_batch_size`` on each
data-parallel rank, no gradient accumulation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primus.tracking.progress import Progress


class ProcessorProgress:
    def __init__(self, training: Mapping[str, Any]):
        """``training``: upstream's ``training`` section as a dict (every release names these fields alike)."""
        self._progress = Progress()
        self._seq_len = int(training["seq_len"])
        self._global_batch = int(training.get("global_batch_size", -1))
        self._local_batch = int(training["local_batch_size"])
        self._steps = int(training["steps"])

    def figures(self, step: int, now: float, dims: Any) -> dict[str, float]:
        """The figures of log step ``step``, read at ``now`` (``time.perf_counter()``); ``dims``: upstream's
        ParallelDims (the data-parallel degree, as upstream's Trainer takes it)."""
        batch = self._global_batch
        if batch < 0:
            batch = self._local_batch * dims.dp_replicate * dims.dp_shard
        return self._progress.at(step, step * batch, now, seq_length=self._seq_len, total_steps=self._steps)
