"""Every rank's memory and utilisation at a log step, gathered (``mlflow_performance_metrics_across_ranks``).

Upstream calls ``training_log`` on every rank at every iteration; on log steps each rank reads its own
figures and takes part in one gather (primus.tracking.across_ranks), and the writer rank logs them as
min / mean / max over ranks beside its own."""

from __future__ import annotations

from primus.tracking.across_ranks import RankGather
from primus.tracking.perf import Utilisation, memory_metrics


class RankFigures:
    def __init__(self, log_interval: int):
        self._log_interval = log_interval
        self._utilisation = Utilisation()
        self._gather = RankGather()

    def at(self, iteration: int) -> dict[str, float] | None:
        """This rank's own figures and the summary over ranks on a log step (every rank must call it), else None."""
        if iteration % self._log_interval:
            return None
        own = memory_metrics() | self._utilisation.read()
        return own | self._gather.gather(own)
