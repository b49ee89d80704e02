"""The metric logger upstream's ``MetricsProcessor`` gets in place of its TensorBoard and W&B loggers: each ``log``
and ``log_validation`` call is one ``run.log``, queued (nothing is written on the training thread), with
upstream's names. What Primus adds to a log step is read at the step (``read_step``, before upstream's ``log``
resets its counters) and made on the hub's thread with the step's metrics."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from torchtitan.components.metrics import BaseLogger

from primus.backends.torchtitan.step_perf import ProcessorPerf
from primus.backends.torchtitan.step_progress import ProcessorProgress
from primus.tracking import RunStatus


class StepReading(NamedTuple):
    """What Primus's figures of a log step are made from, read on the training thread at the step."""

    step: int
    now: float  # time.perf_counter()
    dims: Any  # upstream's ParallelDims
    stragglers: Mapping[str, float]  # every rank's busy time, summarised (primus_stragglers)
    perf: tuple | None  # ProcessorPerf.read's


class TrackingLogger(BaseLogger):
    def __init__(
        self,
        run,
        *,
        tag: str | None = None,
        perf: ProcessorPerf | None = None,
        progress: ProcessorProgress | None = None,
    ):
        self.run = run
        self.tag = tag
        self.perf = perf  # set when the perf metric set is on
        self.progress = progress
        self.dropped: frozenset[str] = frozenset()  # upstream's names not tracked (upstream_mfu)
        self._reading: tuple | None = None  # read_step's StepReading fields, for upstream's log call of that step

    def read_step(self, processor: Any, step: int, stragglers: Mapping[str, float], system: Mapping[str, float] | None):
        """Upstream's ``MetricsProcessor.log`` of ``step`` is about to run (and reset its counters): read what this
        step's figures are made from, as a plain tuple (the ``StepReading`` is made on the hub's thread)."""
        now = time.perf_counter()
        perf = self.perf.read(processor, now, system) if self.perf is not None else None
        self._reading = (step, now, processor.parallel_dims, stragglers, perf)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        reading, self._reading = self._reading, None
        if reading is not None and reading[0] != step:  # not the step read (log_validation's call)
            reading = None
        self.run.log_later(functools.partial(self._records, dict(metrics), step, reading), step)

    def _records(self, metrics: dict[str, Any], step: int, fields: tuple | None):
        """On the hub's thread: the step's record, upstream's metrics with Primus's figures of a training step."""
        if fields is not None:
            reading = StepReading(*fields)
            metrics.update(reading.stragglers)
            if self.progress is not None:
                metrics.update(self.progress.figures(step, reading.now, reading.dims))
            if self.perf is not None and reading.perf is not None:
                metrics.update(self.perf.figures(step, reading.dims, reading.perf))
        if self.dropped:
            metrics = {k: v for k, v in metrics.items() if k not in self.dropped}
        if self.tag is not None:  # upstream's loggers prefix the tag the same way
            metrics = {f"{self.tag}/{k}": v for k, v in metrics.items()}
        return ((step, metrics, None),)

    def close(self) -> None:
        # upstream's train.main() closes the trainer inside `except Exception:` before re-raising
        failed = sys.exc_info()[1] is not None
        self.run.finish(RunStatus.FAILED if failed else RunStatus.FINISHED)
