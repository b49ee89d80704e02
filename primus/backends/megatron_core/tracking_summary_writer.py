"""The writer upstream Megatron gets in place of its TensorBoard SummaryWriter, and the one object a logged step
goes through on the writer rank.

Every upstream ``writer.add_scalar`` (training_log, timers.write, evaluate, MoE/MTP helpers) lands here, one append
each. When upstream's ``training_log`` returns, ``end_step`` reads the clock and hands the whole step to the run as
one function the hub's thread calls, which groups the scalars, adds the progress and perf figures and prints Primus's
console line (one W&B log and one MLflow batch per step; the training thread formats nothing), so every enabled sink
receives every scalar whether or not TensorBoard itself is on. "<name> vs samples" tags (consumed samples as their
step) go to TensorBoard only, as upstream (W&B steps must not go backwards).

The figures come from structured values at log steps only (consumed samples, upstream's FLOPs formula, wall time
between log steps): no device synchronisation or collective is added; docs/metrics.md says what each one counts.
With every tracker off (``run`` None) the object is not upstream's writer; it still gives the console figures
(tokens/s, averages, ETA)."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from primus.backends.megatron_core.console_line import render_console_line
from primus.log import get_logger
from primus.tracking import SinkName
from primus.tracking.measure.device_counters import DeviceCounters
from primus.tracking.measure.perf import IntervalPerf, StepPerf
from primus.tracking.measure.progress import Progress

log = get_logger("primus.megatron")

TENSORBOARD_ONLY = (SinkName.TENSORBOARD,)
# upstream's training_log sends this only to its own W&B writer, which the hub replaces
SAMPLES_VS_STEPS = "samples vs steps"
_VS_SAMPLES = " vs samples"
_DROPPED, _VS_SAMPLES_TAG, _STEP_TAG = range(3)  # what a tag is, judged once per tag name
Record = tuple[int, Mapping[str, Any], "tuple[str, ...] | None"]  # one metrics record for the hub: step, metrics, only


class StepFunctions(NamedTuple):
    """Upstream's functions a logged step calls, bound when the training_log patch installs: a release that
    renamed one fails at start-up, naming the patch, not in the first logged step."""

    num_floating_point_operations: Callable[[Any, int], float]  # (args, batch_size): one batch's model FLOPs
    get_num_microbatches: Callable[[], int]


class Moment(NamedTuple):
    """What a log step's figures are made from, read at the step on the training thread."""

    iteration: int
    now: float  # time.perf_counter()
    batch_size: int  # the global batch
    consumed_samples: float  # upstream's consumed_train_samples, restored on a resume


class TrackingSummaryWriter:
    def __init__(self, run, args, step: StepFunctions | None, *, perf_metrics: bool):
        self.run = run  # None: every tracker off, the console figures only
        self._args = args
        self._step_functions = step  # None only without the training_log patch, which is what asks for figures
        self._dropped_prefixes = tuple(
            prefix
            for prefix, keep in (
                ("learning-rate", args.log_learning_rate_to_tensorboard),
                ("batch-size", args.log_batch_size_to_tensorboard),
            )
            if not keep
        )
        self._calls: list[tuple[str, Any, Any]] = []  # upstream's add_scalar calls since the last hand-over
        if step is not None:  # upstream's fixed arguments end_step reads, once here (Bridge's writer has no steps)
            self._log_interval, self._tensorboard_interval = args.log_interval, args.tensorboard_log_interval
            # megatron-core 0.19's GTP-remat peers are outside data_parallel_size and each takes micro-batches of
            # its own: upstream's training_log multiplies them back in (earlier releases have no such axis)
            self._samples_per_microbatch = (
                args.micro_batch_size * args.data_parallel_size * getattr(args, "gtp_weight_remat_size", 1)
            )
        self._kinds: dict[str, int] = {}  # the hub's thread only
        self._failed = False
        self._throughput_on = run is not None and (args.log_throughput or perf_metrics)  # upload implies it
        self._console_on = args.log_throughput or args.log_progress
        self._perf = StepPerf(
            dtype=training_dtype(args), device_name=mfu_device_name(args), peak_tflops=args.peak_tflops
        )
        self._progress = Progress()
        self._system_on = perf_metrics  # the perf set's memory and utilisation
        self._device = DeviceCounters(self._perf.device_now)
        self._interval = IntervalPerf(
            self._perf,
            world_size=args.world_size,
            skip_iterations=args.log_avg_skip_iterations,
            reset_interval=args.log_avg_reset_interval,
        )
        self._flops_per_batch: dict[int, float] = {}  # upstream's formula depends on the batch size only

    # -- the SummaryWriter surface upstream uses ------------------------------------------
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, *_, **__) -> None:
        # One append, which cannot fail into training: the step's scalars are sorted out on the hub's thread
        # (_records). A tensor goes on unread: the hub turns it into a float there, so the training thread never
        # waits here for the device to finish the step.
        self._calls.append((tag, scalar_value, global_step))

    def add_text(self, tag: str, text_string: str, global_step: int | None = None, *_, **__) -> None:
        try:
            # upstream writes one text per argument (hundreds); the params go to every tracker once instead
            self.run.log_text(tag, text_string, int(global_step or 0), only=TENSORBOARD_ONLY)
        except Exception as e:
            self._failure("add_text", e)

    def flush(self) -> None:
        """Send what upstream wrote since the last step ended (evaluation scalars) now."""
        try:
            if self._calls:
                calls, self._calls = self._calls, []
                last_step = max(int(step or 0) for _, _, step in calls)  # the step a failed or killed alert names
                self.run.log_later(functools.partial(self._records, calls), last_step)
        except Exception as e:
            self._failure("flush", e)

    close = flush

    # -- the step ------------------------------------------------------------------------
    def end_step(
        self,
        iteration: int,
        system: Mapping[str, float] | None = None,
        stragglers: Mapping[str, float] | None = None,
        before: Callable[[], list[Record]] | None = None,
    ) -> None:
        """After upstream's training_log: the step goes to the run as one function the hub's thread calls
        (``_records``): upstream's scalars of the step, "samples vs steps" and, on log steps, the progress and perf
        figures and the console line, all made there.
        Here only what must be read at the step: the clock, the micro-batch count, the device's memory, kept as a
        plain tuple (the ``Moment`` is made on the hub's thread).
        ``system``, ``stragglers``: the figures over ranks (RankFigures), if on: read on the hub's thread only.
        ``before``: makes records that go ahead of the step's own (upstream's One-Logger figures of the step)."""
        try:
            consumed = self._args.consumed_train_samples
            reading = None
            if iteration % self._log_interval == 0:  # a log step: the iteration, the clock, the global batch size
                step = self._step_functions
                assert step is not None, "the training_log patch binds upstream's step functions before it asks"
                batch_size = self._samples_per_microbatch * step.get_num_microbatches()
                reading = (iteration, time.perf_counter(), batch_size, consumed)
            if self.run is None:  # no hub: the console line is made here
                if reading is not None:
                    moment = Moment(*reading)
                    self._print(moment, *self._figures(moment))
                return
            calls, self._calls = self._calls, []
            if iteration % self._tensorboard_interval == 0:
                calls.append((SAMPLES_VS_STEPS, consumed, iteration))
            gathered = system is not None
            if reading is not None and self._system_on and not gathered:
                system = self._device.now()  # the host's latest sample is added on the hub's thread
            self.run.log_later(
                functools.partial(
                    self._records,
                    calls,
                    iteration,
                    reading,
                    system if self._system_on else None,
                    gathered,
                    stragglers,
                    before,
                ),
                iteration,
            )
        except Exception as e:
            self._failure("end_step", e)

    def before_training(self) -> None:
        """Upstream has picked its device: the utilisation's device is looked up and first sampled now, once,
        rather than in the first logged step (~4 ms there: NVML/amdsmi are looked up); its memory counters are
        read once too, so a device without them (CPU) is not asked in the first logged step either."""
        if self._system_on:
            self._perf.begin()
            self._device.now()

    # -- on the hub's thread -------------------------------------------------------------
    def _records(
        self,
        calls: list[tuple[str, Any, Any]],
        iteration: int = 0,
        reading: tuple[int, float, int, float] | None = None,
        system: Mapping[str, float] | None = None,
        gathered: bool = False,
        stragglers: Mapping[str, float] | None = None,
        before: Callable[[], list[Record]] | None = None,
    ) -> list[Record]:
        """One record per step upstream wrote to, with the progress and perf figures of log step ``iteration``
        made from its ``reading`` (a ``Moment``'s fields; perf with throughput on; the console line printed, if on)
        and, the perf set on, its memory and utilisation (``system``: ``gathered`` over ranks, or this device's
        memory read at the step, to which the host's latest sample is added here) and the ``stragglers`` figures;
        then one record per "vs samples" step, to TensorBoard only; ``before``'s records ahead of them all."""
        steps: dict[int, dict[str, Any]] = {}
        samples: dict[int, dict[str, Any]] = {}
        for tag, value, step in calls:
            kind = self._kinds.get(tag)
            if kind is None:
                kind = self._kinds[tag] = self._kind(tag)
            if kind != _DROPPED:
                (samples if kind == _VS_SAMPLES_TAG else steps).setdefault(int(step or 0), {})[tag] = value
        moment = None if reading is None else Moment(*reading)
        perf, progress = self._figures(moment) if moment is not None else ({}, {})
        if moment is not None:
            self._print(moment, perf, progress)
        if progress:  # none off log steps
            steps.setdefault(iteration, {}).update(progress)
        if stragglers:  # every rank's busy time at the previous log step, summarised
            steps.setdefault(iteration, {}).update(stragglers)
        if perf and self._throughput_on:  # none at the first log step, which only starts the clock
            step = steps.setdefault(iteration, {})
            step.update(perf)
            if system is not None:
                step.update(system)
                if not gathered:
                    step.update(self._perf.host_latest())
        return (
            (before() if before is not None else [])
            + [(step, metrics, None) for step, metrics in steps.items()]
            + [(step, metrics, TENSORBOARD_ONLY) for step, metrics in samples.items()]
        )

    def _print(self, moment: Moment, perf: dict[str, float], progress: dict[str, float]) -> None:
        """The console line of a log step, with the console figures on; none at the first log step, which only
        starts the clock. One write, not print's two: each write of stdout runs W&B's console hooks
        (megatron.core.timers imports wandb, which patches sys.stdout.write)."""
        if not (perf and self._console_on):
            return
        try:
            sys.stdout.write(render_console_line(moment.iteration, self._args.train_iters, {**perf, **progress}) + "\n")
            sys.stdout.flush()
        except Exception as e:  # a closed stdout costs the line, not the step's records
            self._failure("console", e)

    def _kind(self, tag: str) -> int:
        if tag.startswith(self._dropped_prefixes):
            return _DROPPED  # log_learning_rate_to_tensorboard / log_batch_size_to_tensorboard false
        return _VS_SAMPLES_TAG if tag.endswith(_VS_SAMPLES) else _STEP_TAG

    def _failure(self, method: str, error: Exception) -> None:
        if not self._failed:
            self._failed = True
            log.warning(
                "tracking writer failed in %s (%r); metrics of this call are dropped, training goes on", method, error
            )

    # -- perf figures --------------------------------------------------------------------
    def _figures(self, moment: Moment) -> tuple[dict[str, float], dict[str, float]]:
        """The perf figures (when asked for) and the progress figures of log step ``moment``."""
        args = self._args
        progress = self._progress.at(
            moment.iteration,
            moment.consumed_samples,
            moment.now,
            seq_length=args.seq_length,
            total_steps=args.train_iters,
        )
        # upstream's FLOPs formula only when its figures are wanted: progress alone needs none of it
        perf = self._interval_perf(moment) if self._throughput_on or self._console_on else {}
        return perf, progress

    def _interval_perf(self, moment: Moment) -> dict[str, float]:
        """The perf figures of the interval that ends at ``moment``, a log step; none at the first log step, which
        only starts the clock (its time includes start-up). Made on the hub's thread, or with every tracker off on the
        training thread: the interval's state is kept on one of them for the whole run."""
        iteration, now, batch_size, _ = moment
        tokens_per_step = float(batch_size * self._args.seq_length)
        figures = self._interval.at(
            iteration, now, lambda steps: (tokens_per_step * steps, self._flops(batch_size) * steps)
        )
        return figures or {}

    def _flops(self, batch_size: int) -> float:
        flops = self._flops_per_batch.get(batch_size)
        if flops is None:
            assert self._step_functions is not None
            flops = float(self._step_functions.num_floating_point_operations(self._args, batch_size))
            self._flops_per_batch[batch_size] = flops
        return flops


def training_dtype(args) -> str:
    """The dtype the MFU peak is looked up for, from Megatron's precision flags (Bridge's model config has the same)."""
    return "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"


def mfu_device_name(args) -> str | None:
    """Device name for the MFU peak; None (no MFU) under FP8, where a dense-peak MFU misleads."""
    import torch

    if getattr(args, "fp8", None) or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name()
