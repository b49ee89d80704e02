"""Primus's tracking globals for Megatron, next to upstream's own (megatron.training.global_vars).

``set_tracking_writer`` takes the place of upstream's ``_set_tensorboard_writer``: on the writer rank
(the last, as upstream) it starts the tracking run — MLflow, W&B, TensorBoard and the journal, all
behind the hub — and installs the TrackingSummaryWriter as upstream's TensorBoard writer. Upstream's own W&B
writer stays unset: W&B is one of the hub's sinks."""

from __future__ import annotations

from typing import Any

from primus.backends.megatron.tracking_plan import plan_tracking
from primus.backends.megatron.training.tracking_session import TrackingSession
from primus.backends.megatron.training.tracking_summary_writer import TrackingSummaryWriter
from primus.log import get_logger, set_level
from primus.log_capture import capture_console, stop_console_capture
from primus.tracking.across_ranks import RankFigures
from primus.tracking.plan import TrackingPlan

log = get_logger("primus.megatron")

_PLAN: TrackingPlan | None = None
_SESSION: TrackingSession | None = None
_RANK_FIGURES: LogStepFigures | None = None  # every rank, with mlflow_performance_metrics_across_ranks


class LogStepFigures:
    """Every rank's memory and utilisation at a log step (``mlflow_performance_metrics_across_ranks``): upstream
    calls ``training_log`` on every rank, so on log steps each rank takes part in one gather."""

    def __init__(self, log_interval: int):
        self._log_interval = log_interval
        self._figures = RankFigures()

    def at(self, iteration: int) -> dict[str, float] | None:
        """On a log step (every rank must call it) this rank's figures and the summary over ranks, else None."""
        return None if iteration % self._log_interval else self._figures.read()


def set_tracking_plan(args) -> TrackingPlan:
    global _PLAN
    if args.logging_level is not None:
        set_level(args.logging_level)  # spec §2: logging_level holds for Primus's lines as well
    _PLAN = plan_tracking(args)
    if _PLAN.log_file is not None:
        capture_console(_PLAN.log_file)  # every rank, from here on: the file is uploaded when the run ends
    return _PLAN


def get_tracking_session() -> TrackingSession | None:
    return _SESSION


def get_rank_figures() -> LogStepFigures | None:
    return _RANK_FIGURES


def set_tracking_writer(args, upstream_global_vars) -> None:
    """Start tracking on the writer rank and hand upstream the TrackingSummaryWriter; with every tracker off, the
    writer rank still gets a session for the console figures (tokens/s, averages, ETA)."""
    global _SESSION, _RANK_FIGURES
    plan = _PLAN if _PLAN is not None else set_tracking_plan(args)
    _RANK_FIGURES = LogStepFigures(args.log_interval) if plan.across_ranks else None
    if args.rank != args.world_size - 1:
        return
    plan.notices.emit(log)
    if plan.config is None:
        if args.log_throughput or args.log_progress:  # the console figures need no tracker
            _SESSION = TrackingSession(None, None, args, perf_metrics=False)
        return
    from primus.tracking import start_run

    run = start_run(plan.run_config(params=_plain_params(args), tags={"primus.backend": "megatron"}))
    run.install_exit_handlers()
    writer = TrackingSummaryWriter(
        run, log_learning_rate=args.log_learning_rate_to_tensorboard, log_batch_size=args.log_batch_size_to_tensorboard
    )
    upstream_global_vars._GLOBAL_TENSORBOARD_WRITER = writer
    _SESSION = TrackingSession(run, writer, args, perf_metrics=plan.perf_metrics)


def finish_tracking(status: str | None = None) -> None:
    """End the run (in-process re-runs, tests); process exit is covered by the run's exit handlers."""
    global _SESSION, _PLAN, _RANK_FIGURES
    session, _SESSION, _PLAN, _RANK_FIGURES = _SESSION, None, None, None
    stop_console_capture()  # the log is complete on disk before the run's end uploads it
    if session is not None and session.writer is not None:  # a tracker is on
        session.writer.flush()
        session.run.finish(status)


def _plain_params(args) -> dict[str, Any]:
    """vars(args) reduced to what trackers can store (the hub redacts secrets)."""
    out: dict[str, Any] = {}
    for key, value in sorted(vars(args).items()):
        if key.startswith("_"):
            continue
        out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
    return out
