"""Primus's tracking state for Megatron, next to upstream's own (megatron.training.global_vars): one object,
``TRACKING``, held by the patches.

``TRACKING.start`` takes the place of upstream's ``_set_tensorboard_writer``: on the writer rank
(the last, as upstream) it starts the tracking run — MLflow, W&B, TensorBoard and the journal, all
behind the hub — and installs the TrackingSummaryWriter as upstream's TensorBoard writer. Upstream's own W&B
writer stays unset: W&B is one of the hub's sinks."""

from __future__ import annotations

import time
from typing import Any

from primus.backends.megatron.tracking_plan import plan_tracking
from primus.backends.megatron.training.tracking_session import StepFunctions, TrackingSession
from primus.backends.megatron.training.tracking_summary_writer import TrackingSummaryWriter
from primus.log import get_logger, set_level
from primus.log_capture import capture_console, stop_console_capture
from primus.tracking.across_ranks import RankFigures
from primus.tracking.alerts import Alert, AlertKind
from primus.tracking.plan import TrackingPlan
from primus.tracking.stacks import register_for_stacks

log = get_logger("primus.megatron")


class LogStepFigures:
    """Every rank's memory and utilisation at a log step (``mlflow_performance_metrics_across_ranks``): upstream
    calls ``training_log`` on every rank, so on log steps each rank takes part in one gather."""

    def __init__(self, log_interval: int):
        self._log_interval = log_interval
        self._figures = RankFigures()

    def at(self, iteration: int) -> dict[str, float] | None:
        """On a log step (every rank must call it) this rank's figures and the summary over ranks, else None."""
        return None if iteration % self._log_interval else self._figures.read()


class MegatronTracking:
    """What Primus keeps for one Megatron process, the one object its patches hold: the plan (every rank, decided
    in upstream's validate_args), the session (the writer rank), the log-step gather (every rank, across ranks on),
    and the upstream functions a logged step calls (bound when the training_log patch installs)."""

    def __init__(self) -> None:
        self.plan: TrackingPlan | None = None
        self.session: TrackingSession | None = None
        self.rank_figures: LogStepFigures | None = None
        self.step_functions: StepFunctions | None = None

    def plan_for(self, args) -> TrackingPlan:
        if args.logging_level is not None:
            set_level(args.logging_level)  # spec §2: logging_level holds for Primus's lines as well
        self.plan = plan_tracking(args)
        if self.plan.log_file is not None:
            capture_console(self.plan.log_file)  # every rank, from here on: the file is uploaded when the run ends
        return self.plan

    def start(self, args, upstream_global_vars) -> None:
        """In place of upstream's _set_tensorboard_writer: start tracking on the writer rank and hand upstream the
        TrackingSummaryWriter; with every tracker off, the writer rank still gets a session for the console
        figures (tokens/s, averages, ETA)."""
        plan = self.plan if self.plan is not None else self.plan_for(args)
        self.rank_figures = LogStepFigures(args.log_interval) if plan.across_ranks else None
        if args.rank != args.world_size - 1:
            if plan.config is not None:  # the writer's delivery process saves this rank's stacks at a stall
                register_for_stacks(plan.config.run_dir)
            return
        plan.notices.emit(log)
        step = self.step_functions  # None: the training_log patch is off, and nothing asks the session for figures
        if plan.config is None:
            if args.log_throughput or args.log_progress:  # the console figures need no tracker
                self.session = TrackingSession(None, None, args, step, perf_metrics=False)
            return
        from primus.tracking import start_run

        run = start_run(plan.run_config(params=_plain_params(args), tags={"primus.backend": "megatron"}))
        run.install_exit_handlers()
        writer = TrackingSummaryWriter(
            run,
            log_learning_rate=args.log_learning_rate_to_tensorboard,
            log_batch_size=args.log_batch_size_to_tensorboard,
        )
        upstream_global_vars._GLOBAL_TENSORBOARD_WRITER = writer
        self.session = TrackingSession(run, writer, args, step, perf_metrics=plan.perf_metrics)

    def before_training(self) -> None:
        if self.session is not None:
            self.session.before_training()

    def after_training_log(self, iteration: int) -> None:
        """Every rank: the log step's gather (if on); the writer rank: the step's perf figures, then the step."""
        system = self.rank_figures.at(iteration) if self.rank_figures is not None else None
        if self.session is not None:
            self.session.after_training_log(iteration, system)

    def busy(self, what: str, on: bool) -> None:
        """The writer rank journals an expected pause in steps (an evaluation), so the stall alert allows for it."""
        if self.session is not None and self.session.run is not None:
            self.session.run.busy(what, on)

    def rejected(self, iteration: int, message: str) -> None:
        """Upstream rejected a result (its rerun state machine): the writer rank raises the alert, read as NaN for
        upstream's NaN and Inf checks and as a loss spike for its spiky-loss check."""
        if self.session is None or self.session.run is None:
            return
        kind = AlertKind.NAN if any(w in message.lower() for w in ("nan", "inf")) else AlertKind.LOSS_SPIKE
        text = f"upstream rejected a result at iteration {iteration}: {message}"
        self.session.run.alert(Alert(kind, iteration, text, time.time()))

    def after_evaluation(self) -> None:
        if self.session is not None:
            self.session.emit()  # validation scalars of this step go out now, not with the next step

    def finish(self, status: str | None = None) -> None:
        """End the run (in-process re-runs, tests); process exit is covered by the run's exit handlers."""
        session = self.session
        self.session, self.plan, self.rank_figures = None, None, None
        stop_console_capture()  # the log is complete on disk before the run's end uploads it
        if session is not None and session.writer is not None:  # a tracker is on
            session.writer.flush()
            session.run.finish(status)


TRACKING = MegatronTracking()


def _plain_params(args) -> dict[str, Any]:
    """vars(args) reduced to what trackers can store (the hub redacts secrets)."""
    out: dict[str, Any] = {}
    for key, value in sorted(vars(args).items()):
        if key.startswith("_"):
            continue
        out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
    return out
