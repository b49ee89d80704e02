"""The progress figures (``tracking/measure/progress.py``) of a MaxText train step: upstream numbers its steps from 0 and
restores the step from its checkpoint, so step ``n`` is ``n + 1`` steps of ``global_batch_size_to_train_on``
samples of ``max_target_length`` tokens, counted from the run's start whatever the restarts. Under batch-size
ramp-up (``enable_rampup_batch_size``) the counts are of the full batch from step 0, an upper bound."""

from __future__ import annotations

from typing import Any

from primus.tracking.measure.progress import Progress


class StepProgress:
    def __init__(self, config: Any):
        self._progress = Progress()
        self._length = int(config.max_target_length)
        self._batch = int(config.global_batch_size_to_train_on)
        self._steps = int(config.steps)

    def figures(self, step: int, now: float) -> dict[str, float]:
        """The figures of train step ``step``, read at ``now`` (``time.perf_counter()``)."""
        done = step + 1
        return self._progress.at(done, done * self._batch, now, seq_length=self._length, total_steps=self._steps)
