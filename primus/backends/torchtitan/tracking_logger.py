"""The metric logger upstream's ``MetricsProcessor`` gets in place of its TensorBoard and W&B loggers.

Everything upstream logs — ``log`` (losses, grad norm, throughput, memory, lr, tokens seen) and
``log_validation`` — is one ``run.log`` per call: every enabled sink (TensorBoard, W&B, MLflow, journal)
gets every metric, with upstream's names (MLflow's sink spells them for MLflow: ``throughput(tps)`` ->
``throughput_tps_<hash>``). The call queues and returns; nothing is written on the training thread."""

from __future__ import annotations

import sys
from typing import Any

from torchtitan.components.metrics import BaseLogger

from primus.backends.torchtitan.step_perf import ProcessorPerf
from primus.backends.torchtitan.step_progress import ProcessorProgress
from primus.tracking import RunStatus


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
        self.perf = perf  # set when the perf metric set is on; read by the wrapped MetricsProcessor.log
        self.progress = progress  # the progress figures, read there too
        self.dropped: frozenset[str] = frozenset()  # upstream's names not tracked (upstream_mfu)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        if self.dropped:
            metrics = {k: v for k, v in metrics.items() if k not in self.dropped}
        if self.tag is not None:  # upstream's loggers prefix the tag the same way
            metrics = {f"{self.tag}/{k}": v for k, v in metrics.items()}
        self.run.log(step, metrics)

    def close(self) -> None:
        # upstream's train.main() closes the trainer inside `except Exception:` before re-raising
        failed = sys.exc_info()[1] is not None
        self.run.finish(RunStatus.FAILED if failed else RunStatus.FINISHED)
