"""Every rank's memory and utilisation at a log step, gathered (``mlflow_performance_metrics_across_ranks``).

Upstream calls ``training_log`` on every rank at every iteration; on log steps each rank reads its own
figures and takes part in one gather (primus.tracking.across_ranks), and the writer rank logs them as
min / mean / max over ranks beside its own."""

from __future__ import annotations

from primus.tracking.across_ranks import RankFigures


class LogStepFigures:
    def __init__(self, log_interval: int):
        self._log_interval = log_interval
        self._figures = RankFigures()

    def at(self, iteration: int) -> dict[str, float] | None:
        """On a log step (every rank must call it) this rank's figures and the summary over ranks, else None."""
        return None if iteration % self._log_interval else self._figures.read()
