"""Primus's tracking for one Megatron-Bridge process, the one object its patches hold (``TRACKING``).

On Bridge's writing rank (the last), the first ask for its writers plans and starts the run, and from then on
Bridge's TensorBoard writer is Megatron's ``TrackingSummaryWriter`` (Bridge's code is megatron-core's: the same
``add_scalar`` calls), so every scalar Bridge writes goes to the run and every tracker; Bridge's own W&B and MLflow
writers stay unset. Each step goes out when ``training_log`` (or an evaluation) returns, with the progress figures
from Bridge's own consumed samples. Bridge loads its checkpoint in ``setup``, before the run starts at its first
log call, so the checkpoint journal is made with the plan and keeps that record until then."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

from primus.backends.megatron_bridge.step_perf import BridgePerf
from primus.backends.megatron_bridge.tracking_plan import plan_tracking
from primus.backends.megatron_core.parallel_degrees import parallel_degrees
from primus.backends.megatron_core.tracking_summary_writer import TrackingSummaryWriter
from primus.config.schemas.tracking import params_for
from primus.log import get_logger
from primus.tracking import RunStatus
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.health.stacks import register_for_stacks
from primus.tracking.measure.across_ranks import RankFigures
from primus.tracking.measure.progress import Progress
from primus.tracking.plan import TrackingPlan
from primus.tracking.tags.parallel import layout_tags

log = get_logger("primus.megatron_bridge")


def flat_params(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Bridge's ConfigContainer.to_dict() as dotted keys with values trackers can store."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_params(value, name + "."))
        elif isinstance(value, (str, int, float, bool, type(None))):
            out[name] = value
        else:  # lists as JSON, anything else (dtypes, enums, callables) by its str
            out[name] = json.dumps(value, default=str) if isinstance(value, (list, tuple)) else str(value)
    return out


def _megatron_defaults() -> dict[str, Any]:
    return {p.name: p.default for p in params_for("megatron")}  # the averages' window, as Megatron's


def _writer_args(world_size: int) -> SimpleNamespace:
    """What the Megatron writer reads from Megatron's arguments, for Bridge: its config decides what it writes
    (the learning rate and batch size are kept); the perf figures are ``BridgePerf``'s, from Bridge's counters."""
    return SimpleNamespace(
        **{**_megatron_defaults(), "log_batch_size_to_tensorboard": True},
        world_size=world_size,
        log_throughput=False,
        log_progress=False,
        bf16=False,
        fp16=False,
    )


class BridgeTracking:
    def __init__(self) -> None:
        self.writer: TrackingSummaryWriter | None = None
        self.run: Any = None
        self.progress: Progress | None = None
        self.perf: BridgePerf | None = None  # the perf set, when Bridge's throughput options or the plan ask for it
        self.rank_figures: RankFigures | None = None  # every rank's busy time at log steps (primus_stragglers)
        self._writes = False  # this rank is Bridge's writing one (the last)
        self._started = False  # started on this process (whether or not a tracker is on)
        self.plan: TrackingPlan | None = None  # every rank's, before training (the plan patch)
        self.checkpoints: CheckpointJournal | None = None  # the writing rank's, with a tracker on

    def plan_for(self, config: Any, rank: int, world_size: int) -> None:
        """Every rank, before training (raises on a bad setting). With a tracker on, the writing rank's checkpoint
        journal is made now (a load in setup waits there for the run); another rank has its stacks saved at a stall."""
        self.plan = plan_tracking(config, rank=rank)
        self._writes = rank == world_size - 1
        if self.plan.stragglers and world_size > 1:  # with a tracker or not: the console names the slowest rank
            self.rank_figures = RankFigures(figures=False, stragglers=True, writes=self._writes)
        if self.plan.config is None:
            return
        if self._writes:
            self.checkpoints = CheckpointJournal()
        else:
            register_for_stacks(self.plan.config.run_dir)

    def writer_for(self, state: Any, rank: int, world_size: int) -> TrackingSummaryWriter | None:
        """The writer Bridge gets in place of its SummaryWriter; None on other ranks and with every tracker off."""
        if not self._started and rank == world_size - 1:
            self._started = True
            self.writer = self._start(state.cfg, rank, world_size)
        return self.writer

    def _start(self, config: Any, rank: int, world_size: int) -> TrackingSummaryWriter | None:
        plan = self.plan if self.plan is not None else plan_tracking(config, rank=rank)
        plan.notices.emit(log)
        if plan.config is None:
            return None
        self.checkpoints = self.checkpoints or CheckpointJournal()  # None: planned here, not before setup
        tags = layout_tags(world_size, **parallel_degrees(config.model, world_size))
        self.run = plan.start(flat_params(config.to_dict()), tags, self.checkpoints)
        self.progress = Progress()
        self.perf = _perf(config, plan, world_size)
        return TrackingSummaryWriter(self.run, _writer_args(world_size), None, perf_metrics=False)

    def end_step(self, state: Any) -> None:
        """After Bridge's training_log (every rank): at a log step every rank's busy time is published (stragglers
        on), and on the writing rank the figures join the step's scalars; then the step goes out."""
        train, config = state.train_state, state.cfg
        log_step = train.step % config.logger.log_interval == 0
        ranks = self.rank_figures.read() if self.rank_figures is not None and log_step else None
        if self.writer is None:
            return
        if ranks is not None:  # read on the hub's thread, which may wait for them (bounded)
            ranks.journal_hosts(self.run)
            stragglers, step = ranks.stragglers, train.step
            self.run.log_later(lambda: [(step, dict(stragglers), None)], step)
        if self.progress is not None and log_step:
            now = time.perf_counter()
            figures = self.progress.at(
                train.step,
                train.consumed_train_samples,
                now,
                seq_length=config.model.seq_length,
                total_steps=config.train.train_iters,
            )
            if self.perf is not None:
                figures.update(
                    self.perf.at(
                        train.step,
                        now,
                        consumed_samples=train.consumed_train_samples,
                        flops_so_far=train.floating_point_operations_so_far,
                        seq_length=config.model.seq_length,
                    )
                )
            for name, value in figures.items():
                self.writer.add_scalar(name, value, train.step)
        self.writer.flush()

    def evaluating(self, on: bool) -> None:
        """An evaluation starts (``on``) or ends on the writing rank (with a tracker on): journaled, so the stall
        alert allows for it and goodput counts it as badput."""
        if self.checkpoints is not None:
            self.checkpoints.evaluating(on)

    def emit(self) -> None:
        """The step's scalars (or an evaluation's) go out now, not with the next step's."""
        if self.writer is not None:
            self.writer.flush()

    def detach(self) -> None:
        """Our writer is no longer Bridge's (it failed): steps go nowhere from here; a run already started is
        ended by its exit handlers."""
        self.writer, self.perf, self.checkpoints = None, None, None

    def finish(self, status: str = RunStatus.FINISHED) -> None:
        writer, run = self.writer, self.run
        if self.rank_figures is not None:
            self.rank_figures.close()
        self.writer, self.run, self.progress, self.perf, self.rank_figures = None, None, None, None, None
        self._started, self.plan, self.checkpoints = False, None, None
        if writer is not None:
            writer.flush()
            run.finish(status)


def _perf(config: Any, plan: Any, world_size: int) -> BridgePerf | None:
    """As Megatron's: the throughput figures with Bridge's own throughput options or the perf set, memory and
    utilisation with the perf set."""
    logger = config.logger
    if not (logger.log_throughput or logger.log_throughput_to_tensorboard or plan.perf_metrics):
        return None
    defaults = _megatron_defaults()
    return BridgePerf(
        config.model,
        world_size=world_size,
        peak_tflops=plan.peak_tflops,
        system=plan.perf_metrics,
        skip_iterations=defaults["log_avg_skip_iterations"],
        reset_interval=defaults["log_avg_reset_interval"],
    )


TRACKING = BridgeTracking()  # module-level: upstream's hooks, wrapped at import, have no other way to it
