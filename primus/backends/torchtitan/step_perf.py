"""The perf/memory/utilisation set (``mlflow_upload_performance_metrics``) at a log step, from the counters
upstream's ``MetricsProcessor`` keeps (tokens and wall time since the last log) before it resets them: host-side
values only, no device synchronisation.

Unlike upstream's ``tflops``/``mfu(%)``, MFU here uses the device's datasheet peak and is left out when
the peak is unknown (upstream falls back to an A100's, which gives CPUs and new GPUs a wrong MFU)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from primus.tracking.measure.device_counters import DeviceCounters
from primus.tracking.measure.perf import StepPerf

_DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


class PerfReading(NamedTuple):
    """What the perf set of a log step is made from, read from upstream's processor at the step."""

    seconds: float  # since upstream's last log
    tokens: float  # this rank's tokens since then
    flops_per_token: float
    device_name: str | None
    system: Mapping[str, float]  # the memory/utilisation gathered over ranks, or this device's memory now
    gathered: bool


class ProcessorPerf:
    """Upstream's processor counters mapped onto the perf set (``StepPerf``): ``read`` on the training thread at
    the step, ``figures`` on the hub's thread (log steps in order)."""

    def __init__(self, dtype: str, log_freq: int, peak_tflops: float | None = None):
        self._perf = StepPerf(dtype=_DTYPES.get(dtype, dtype), peak_tflops=peak_tflops)  # the run's over the table's
        self._log_freq = log_freq  # the steps upstream counts for the first log (as its end_to_end(s))
        # upstream's Trainer has set its device before it builds the metric logger
        self._perf.begin()
        self._last_step: int | None = None
        self._device = DeviceCounters(self._perf.device_now)

    def read(self, processor: Any, now: float, system: Mapping[str, float] | None = None) -> tuple:
        """Call before upstream's ``log`` on the same step (it resets the counters read here). ``system``: the
        figures gathered over ranks, in place of this rank's own. A plain tuple: ``figures`` makes the
        ``PerfReading``, on the hub's thread."""
        return (
            now - processor.time_last_log,
            processor.ntokens_since_last_log,
            processor.num_flops_per_token,
            processor.device_memory_monitor.device_name,
            self._device.now() if system is None else system,
            system is not None,
        )

    def figures(self, step: int, dims: Any, fields: tuple) -> dict[str, float]:
        reading = PerfReading(*fields)
        steps = step - self._last_step if self._last_step is not None else self._log_freq
        self._last_step = step
        # ntokens_since_last_log counts this rank's batches; data-parallel ranks each see their own
        tokens = reading.tokens * dims.world_size / dims.non_data_parallel_size
        self._perf.device_name = reading.device_name
        perf = self._perf.interval(
            tokens=tokens,
            seconds=reading.seconds,
            steps=steps,
            world_size=dims.world_size,
            flops=float(reading.flops_per_token) * tokens,
        )
        perf.update(reading.system)
        if not reading.gathered:
            perf.update(self._perf.host_latest())
        return perf
