"""Primus's tracking state for Megatron, next to upstream's own (megatron.training.global_vars): one object,
``TRACKING``, held by the patches.

``TRACKING.start`` takes the place of upstream's ``_set_tensorboard_writer``: on the writer rank
(the last, as upstream) it starts the tracking run — MLflow, W&B, TensorBoard and the journal, all
behind the hub — and installs the TrackingSummaryWriter as upstream's TensorBoard writer. Upstream's own W&B
writer stays unset: W&B is one of the hub's sinks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from primus.backends.megatron.log_step_figures import LogStepFigures, batch_wait_s
from primus.backends.megatron.tracking_plan import plan_tracking
from primus.backends.megatron.upstream_one_logger import UpstreamOneLogger
from primus.backends.megatron_core.parallel_degrees import parallel_degrees
from primus.backends.megatron_core.tracking_summary_writer import StepFunctions, TrackingSummaryWriter
from primus.log import get_logger, set_level
from primus.log_capture import capture_console, stop_console_capture
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.health.stacks import register_for_stacks
from primus.tracking.journal.records import Alert, AlertKind
from primus.tracking.plan import TrackingPlan
from primus.tracking.tags.parallel import layout_tags
from primus.tracking.trackers.registry import sink_names

log = get_logger("primus.megatron")


class MegatronTracking:
    """What Primus keeps for one Megatron process, the one object its patches hold: the plan (every rank, decided
    in upstream's validate_args), the writer (the writer rank: upstream's writer, and the object each logged step
    ends in), the log-step gather (every rank, across ranks on), the upstream bindings a logged step needs (bound when
    the training_log patch installs), and where the checkpoint patches journal a save or a load (the writer rank, with
    a tracker on). Its ``training_log``, ``evaluate_and_print_results`` and ``setup_model_and_optimizer`` are the
    training_log patch's wrappers: upstream's call comes straight here."""

    def __init__(self) -> None:
        self.plan: TrackingPlan | None = None
        self.writer: TrackingSummaryWriter | None = None
        self.rank_figures: LogStepFigures | None = None
        self.step_functions: StepFunctions | None = None
        self.iteration_of: Callable[[tuple, dict], int] | None = None  # training_log's (args, kwargs) -> iteration
        self.iteration_position = 0  # where training_log takes it by position: read there with no call
        self.checkpoints: CheckpointJournal | None = None
        self.one_logger: UpstreamOneLogger | None = None  # upstream's get_one_logger(), on the writer rank

    def plan_for(self, args) -> TrackingPlan:
        if args.logging_level is not None:
            set_level(args.logging_level)  # spec §2: logging_level holds for Primus's lines as well
        self.plan = plan_tracking(args)
        if self.plan.log_file is not None:
            capture_console(self.plan.log_file)  # every rank, from here on: the file is uploaded when the run ends
        return self.plan

    def start(self, args, upstream_global_vars) -> None:
        """In place of upstream's _set_tensorboard_writer: start tracking on the writer rank and hand upstream the
        TrackingSummaryWriter; with every tracker off, the writer rank still gets a writer (not upstream's) for the console
        figures (tokens/s, averages, ETA)."""
        plan = self.plan if self.plan is not None else self.plan_for(args)
        stragglers = plan.stragglers and args.world_size > 1
        if plan.across_ranks or stragglers:
            writes = args.rank == args.world_size - 1  # also names the slowest rank on the console
            self.rank_figures = LogStepFigures(args.log_interval, plan.across_ranks, stragglers, writes)
        if args.rank != args.world_size - 1:
            if plan.config is not None:  # the writer's delivery process saves this rank's stacks at a stall
                register_for_stacks(plan.config.run_dir)
            return
        plan.notices.emit(log)
        step = self.step_functions  # None: the training_log patch is off, and nothing asks the writer for figures
        if plan.config is None:
            if args.log_throughput or args.log_progress:  # the console figures need no tracker
                self.writer = TrackingSummaryWriter(None, args, step, perf_metrics=False)
            return
        self.checkpoints = CheckpointJournal()
        tags = layout_tags(args.world_size, **parallel_degrees(args, args.world_size))
        run = plan.start(_plain_params(args), tags, self.checkpoints)
        self.writer = TrackingSummaryWriter(run, args, step, perf_metrics=plan.perf_metrics)
        upstream_global_vars._GLOBAL_TENSORBOARD_WRITER = self.writer

    # -- the training_log patch's wrappers (wrapt's signature) -----------------------------
    def training_log(self, wrapped, instance, args, kwargs):
        """Every rank: the log step's row published (if on); the writer rank: the step ends in the writer."""
        waited = batch_wait_s() if self.rank_figures is not None else math.nan  # upstream resets its timers
        one_logger = self.one_logger
        if one_logger is None:
            result = wrapped(*args, **kwargs)
        else:
            one_logger.held = []  # upstream's One-Logger figures of the step go with its record
            try:
                result = wrapped(*args, **kwargs)
            except BaseException:
                one_logger.release()
                raise
        if self.rank_figures is None and self.writer is None:
            return result
        assert self.iteration_of is not None, "bound with the wrapper, when the training_log patch installs"
        at = self.iteration_position  # each call of ours costs microseconds in a logged step's cold caches
        iteration = args[at] if len(args) > at else self.iteration_of(args, kwargs)
        before = None if one_logger is None else one_logger.step_ends(iteration)
        ranks = self.rank_figures.at(iteration, waited) if self.rank_figures is not None else None
        writer = self.writer
        if writer is not None:  # the figures over ranks are read on the hub's thread (they may wait there)
            if ranks is None:
                writer.end_step(iteration, None, None, before)
            else:
                if writer.run is not None:
                    ranks.journal_hosts(writer.run)
                writer.end_step(iteration, ranks.system, ranks.stragglers, before)
        return result

    def evaluate_and_print_results(self, wrapped, instance, args, kwargs):
        self.busy("evaluation", True)  # no step is logged meanwhile: not a stall
        try:
            result = wrapped(*args, **kwargs)
        finally:
            self.busy("evaluation", False)
        if self.writer is not None and self.writer.run is not None:
            self.writer.flush()  # validation scalars of this step go out now, not with the next step
        return result

    def setup_model_and_optimizer(self, wrapped, instance, args, kwargs):
        # after it, not around train(): the device is picked by then, and a wrapper around the whole loop would
        # make every step's hook part of one call in the benchmarks' CPU accounting
        result = wrapped(*args, **kwargs)
        if self.writer is not None:
            self.writer.before_training()
        return result

    def upstream_one_logger(self) -> UpstreamOneLogger | None:
        """The object for upstream's ``get_one_logger()`` on the writer rank when Primus's One-Logger is on."""
        run = self.writer.run if self.writer is not None else None
        if run is None or self.plan is None or self.plan.config is None or self.plan.config.one_logger is None:
            return None
        # for every tracker by name: a record "for all" would count as a log step (goodput, resumed steps)
        names = tuple(sink_names(self.plan.config))
        self.one_logger = UpstreamOneLogger(lambda step, figures: run.log(step, figures, names), names)
        return self.one_logger

    def busy(self, what: str, on: bool) -> None:
        """The writer rank journals an expected pause in steps (an evaluation), so the stall alert allows for it."""
        if self.writer is not None and self.writer.run is not None:
            self.writer.run.busy(what, on)

    def rejected(self, iteration: int, message: str) -> None:
        """Upstream rejected a result (its rerun state machine): the writer rank raises the alert, read as NaN for
        upstream's NaN and Inf checks and as a loss spike for its spiky-loss check."""
        if self.writer is None or self.writer.run is None:
            return
        kind = AlertKind.NAN if any(w in message.lower() for w in ("nan", "inf")) else AlertKind.LOSS_SPIKE
        text = f"upstream rejected a result at iteration {iteration}: {message}"
        self.writer.run.alert(Alert(kind, iteration, text, time.time()))

    def finish(self, status: str | None = None) -> None:
        """End the run (in-process re-runs, tests); process exit is covered by the run's exit handlers. The console
        capture stops after the run's end: the end's one drain has the hub's thread print the last log steps' lines
        into the log file before the end uploads it."""
        writer = self.writer
        if self.rank_figures is not None:
            self.rank_figures.close()
        self.writer, self.plan, self.rank_figures, self.checkpoints = None, None, None, None
        self.one_logger = None
        run = writer.run if writer is not None else None  # None: every tracker off
        if writer is not None and run is not None:
            writer.flush()  # what upstream wrote since the last step ended (evaluation scalars)
            run.finish(status)
        stop_console_capture()


TRACKING = MegatronTracking()  # module-level: upstream's hooks, wrapped at import, have no other way to it


def _plain_params(args) -> dict[str, Any]:
    """vars(args) reduced to what trackers can store (the hub redacts secrets)."""
    out: dict[str, Any] = {}
    for key, value in sorted(vars(args).items()):
        if key.startswith("_"):
            continue
        out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
    return out
