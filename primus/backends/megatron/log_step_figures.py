"""What every Megatron rank publishes at a log step (memory, utilisation, busy time, data wait) and what the writer
rank gets back: upstream calls ``training_log`` on every rank, and the session asks here at each call."""

from __future__ import annotations

import math

from primus.tracking.measure.across_ranks import LogStepRanks, RankFigures


def batch_wait_s() -> float:
    """This rank's seconds in upstream's ``batch-generator`` timer (the forward step's batch reads) since the timers'
    last reset, the previous log step: timed at ``--timing-log-level 2``, NaN below it."""
    from megatron.core.timers import DummyTimer
    from megatron.training import get_timers

    timer = get_timers()("batch-generator", log_level=2)
    return math.nan if isinstance(timer, DummyTimer) else float(timer.elapsed(reset=False))


class LogStepFigures:
    """Every rank's memory and utilisation (``mlflow_performance_metrics_across_ranks``) and busy time
    (``primus_stragglers``) at a log step: upstream calls ``training_log`` on every rank, so on log steps each rank
    publishes its row, and the writer rank gets the previous log step's summaries."""

    def __init__(self, log_interval: int, figures: bool, stragglers: bool, writes: bool):
        self._log_interval = log_interval
        self._figures = RankFigures(figures, stragglers, writes)

    def at(self, iteration: int, data_wait_s: float = math.nan) -> LogStepRanks | None:
        """On a log step (every rank calls it) this rank's figures and the previous log step's summaries over ranks
        (the writer rank), else None. ``data_wait_s``: this rank's batch-generator seconds since the last log step
        (NaN: not timed)."""
        return None if iteration % self._log_interval else self._figures.read(data_wait_s)

    def close(self) -> None:
        self._figures.close()
