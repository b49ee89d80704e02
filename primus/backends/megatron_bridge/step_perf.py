"""The perf set (docs/metrics.md: ``perf/*``, and ``mem/*``/``sys/*`` with mlflow_upload_performance_metrics) at
Megatron-Bridge's log steps, from counters Bridge keeps on the host: its consumed samples (the job's, which a
checkpoint restores) and ``floating_point_operations_so_far``, the running total of its own FLOPs function that its
``training_log`` also takes its TFLOP/s from. The interval is the wall time between two log steps; no device value
is read (the allocator counters are host-side) and nothing is computed off log steps."""

from __future__ import annotations

from typing import Any

from primus.backends.megatron_core.tracking_summary_writer import mfu_device_name, training_dtype
from primus.tracking.measure.perf import IntervalPerf, StepPerf


class BridgePerf:
    """The tokens/s, TFLOP/s, MFU and time per step figures; with ``system``, the perf set's memory and utilisation.
    ``model``: Bridge's model config (the same precision flags as Megatron's args)."""

    def __init__(
        self,
        model: Any,
        *,
        world_size: int,
        peak_tflops: float | None,
        system: bool,
        skip_iterations: int,
        reset_interval: int,
    ):
        self._perf = StepPerf(dtype=training_dtype(model), device_name=mfu_device_name(model), peak_tflops=peak_tflops)
        self._interval = IntervalPerf(
            self._perf, world_size=world_size, skip_iterations=skip_iterations, reset_interval=reset_interval
        )
        self._system = system
        self._counters: tuple[float, float | None] = (0.0, None)  # samples, FLOPs so far at the previous log step
        if system:  # Bridge has picked its device: the utilisation's is looked up now, not at a logged step
            self._perf.begin()

    def at(self, step: int, now: float, *, consumed_samples: float, flops_so_far: Any, seq_length: int) -> dict:
        """None at the first log step, which only starts the clock (its time includes start-up)."""
        # a tensor would need a device read: Bridge keeps a number, and anything else gives no TFLOP/s (and adds
        # nothing to the TFLOP/s average)
        flops_now = float(flops_so_far) if isinstance(flops_so_far, (int, float)) else None
        (samples_before, flops_before), self._counters = self._counters, (consumed_samples, flops_now)

        def amounts(steps: int) -> tuple[float, float | None]:
            tokens = (consumed_samples - samples_before) * seq_length
            return tokens, flops_now - flops_before if flops_now is not None and flops_before is not None else None

        out = self._interval.at(step, now, amounts)
        if out is None:
            return {}
        if self._system:
            out.update(self._perf.system())
        return out
