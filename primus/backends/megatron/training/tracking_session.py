"""Writer-rank state of one Megatron run: the tracking run and the writer upstream writes to (when a
tracker is on), and the throughput accumulators fed from the wrapped ``training_log``, which feed the
console line whether or not any tracker is on.

Perf figures come from structured values at log steps only — consumed tokens, upstream's own FLOPs
formula, wall time between log steps — so no device synchronisation or collective is added."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from primus.backends.megatron.training.tracking_summary_writer import TrackingSummaryWriter
from primus.tracking.perf import IntervalAverager, StepPerf

# upstream's training_log sends this only to its own W&B writer, which the hub replaces
SAMPLES_VS_STEPS = "samples vs steps"


class StepFunctions(NamedTuple):
    """Upstream's functions a logged step calls, bound when the training_log patch installs: a release that
    renamed one fails at start-up, naming the patch, not in the first logged step."""

    num_floating_point_operations: Callable[[Any, int], float]  # (args, batch_size): one batch's model FLOPs
    get_num_microbatches: Callable[[], int]


class TrackingSession:
    """``run`` and ``writer`` are None when every tracker is off: the console figures still come."""

    def __init__(
        self, run, writer: TrackingSummaryWriter | None, args, step: StepFunctions | None, *, perf_metrics: bool
    ):
        self.run = run
        self.writer = writer
        self._args = args
        self._step = step  # None only without the training_log patch, which is what asks for figures
        self._averager = IntervalAverager(args.log_avg_skip_iterations, args.log_avg_reset_interval)
        self._throughput_on = writer is not None and (args.log_throughput or perf_metrics)  # upload implies it
        self._console_on = args.log_throughput or args.log_progress
        self._perf = StepPerf(dtype=_dtype(args), device_name=_device_name(args), peak_tflops=args.peak_tflops)
        self._system_on = perf_metrics  # the perf set's memory and utilisation
        self._last: tuple[int, float] | None = None  # (iteration, perf_counter) at the previous log step
        self._flops_per_batch: dict[int, float] = {}  # upstream's formula depends on the batch size only

    def before_training(self) -> None:
        """Upstream has picked its device: the utilisation's device is looked up and first sampled now, once,
        rather than in the first logged step (~4 ms there: NVML/amdsmi are looked up)."""
        if self._system_on:
            self._perf.begin()

    def after_training_log(self, iteration: int, system: Mapping[str, float] | None = None) -> None:
        """Called after upstream's training_log: adds perf figures on log steps, then sends the step.
        ``system``: the memory/utilisation figures gathered over ranks this step (RankFigures), if on."""
        if self.writer is not None and iteration % self._args.tensorboard_log_interval == 0:
            self.writer.add_scalar(SAMPLES_VS_STEPS, self._args.consumed_train_samples, iteration)
        perf = self._log_step_perf(iteration)
        if self.writer is not None:
            figures = perf if self._throughput_on else None
            if figures is not None and self._system_on:  # the perf set: to every tracker, as the others
                figures |= self._perf.system() if system is None else system
            self.writer.emit(figures, step=iteration)
        if perf is None:
            return
        if self._console_on:
            # one write, not print's two: each write of stdout runs W&B's console hooks (megatron.core.timers
            # imports wandb, which patches sys.stdout.write)
            sys.stdout.write(render_console_line(iteration, self._args.train_iters, perf) + "\n")
            sys.stdout.flush()

    def emit(self) -> None:
        """Send what upstream wrote since the last call (evaluation scalars) now."""
        if self.writer is not None:
            self.writer.emit()

    def _log_step_perf(self, iteration: int) -> dict[str, float] | None:
        """The perf figures of the interval that ends at this log step; None off log steps and at the
        first log step, which only starts the clock (its time includes start-up)."""
        if iteration % self._args.log_interval != 0 or not (self._throughput_on or self._console_on):
            return None
        now = time.perf_counter()
        previous, self._last = self._last, (iteration, now)
        if previous is None or iteration <= previous[0]:
            self._averager.start()
            return None
        return self._interval_perf(iteration - previous[0], now - previous[1])

    def _interval_perf(self, iterations: int, seconds: float) -> dict[str, float]:
        args, step = self._args, self._step
        assert step is not None, "the training_log patch binds upstream's step functions before it asks for figures"
        batch_size = args.micro_batch_size * args.data_parallel_size * step.get_num_microbatches()
        tokens = float(batch_size * args.seq_length * iterations)
        flops = self._flops(batch_size) * iterations
        self._averager.add(iterations=iterations, seconds=seconds, tokens=tokens, flops=flops)
        perf = self._perf.interval(
            tokens=tokens, seconds=seconds, steps=iterations, world_size=args.world_size, flops=flops
        )
        perf.update(self._averager.averages(args.world_size))
        return perf

    def _flops(self, batch_size: int) -> float:
        flops = self._flops_per_batch.get(batch_size)
        if flops is None:
            assert self._step is not None
            flops = float(self._step.num_floating_point_operations(self._args, batch_size))
            self._flops_per_batch[batch_size] = flops
        return flops


def render_console_line(iteration: int, train_iters: int | None, perf: Mapping[str, float]) -> str:
    parts = [f"iteration {iteration}/{train_iters}"]
    if "perf/tokens_per_sec_per_gpu" in perf:
        avg = perf.get("perf/tokens_per_sec_per_gpu_avg")
        parts.append(
            f"tokens/s/GPU {perf['perf/tokens_per_sec_per_gpu']:.1f}" + (f" (avg {avg:.1f})" if avg is not None else "")
        )
    if "perf/tflops_per_gpu" in perf:
        avg = perf.get("perf/tflops_per_gpu_avg")
        parts.append(
            f"TFLOP/s/GPU {perf['perf/tflops_per_gpu']:.3f}" + (f" (avg {avg:.3f})" if avg is not None else "")
        )
    if "perf/mfu" in perf:
        parts.append(f"MFU {perf['perf/mfu']:.1%}")
    avg_ms = perf.get("perf/iteration_time_ms_avg", perf.get("perf/iteration_time_ms"))
    if avg_ms is not None and train_iters:
        remaining = max(train_iters - iteration, 0) * avg_ms / 1e3
        parts.append(f"ETA {_hms(remaining)}")
    return "[primus] " + " | ".join(parts)


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _dtype(args) -> str:
    return "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"


def _device_name(args) -> str | None:
    """Device name for the MFU peak; None (no MFU) under FP8, where a dense-peak MFU misleads."""
    import torch

    if getattr(args, "fp8", None) or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name()
