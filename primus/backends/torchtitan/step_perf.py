"""The perf/memory/utilisation set (``mlflow_upload_performance_metrics``) at a log step, from the counters
upstream's ``MetricsProcessor`` keeps (tokens and wall time since the last log) before it resets them: host-side
values only, no device synchronisation.

Unlike upstream's ``tflops``/``mfu(%)``, MFU here uses the device's datasheet peak and is left out when
the peak is unknown (upstream falls back to an A100's, which gives CPUs and new GPUs a wrong MFU)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from primus.tracking.perf import StepPerf

_DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


class ProcessorPerf:
    """Upstream's processor counters mapped onto the perf set (``StepPerf``)."""

    def __init__(self, dtype: str, log_freq: int, peak_tflops: float | None = None):
        self._perf = StepPerf(dtype=_DTYPES.get(dtype, dtype), peak_tflops=peak_tflops)  # the run's over the table's
        self._log_freq = log_freq  # the steps upstream counts for the first log (as its end_to_end(s))
        # upstream's Trainer has set its device before it builds the metric logger
        self._perf.begin()
        self._last_step: int | None = None

    def measure(self, processor: Any, step: int, system: Mapping[str, float] | None = None) -> dict[str, float]:
        """Call before upstream's ``log`` on the same step (it resets the counters read here). ``system``: the
        memory/utilisation figures gathered over ranks (RankFigures), in place of this rank's own reading."""
        seconds = time.perf_counter() - processor.time_last_log
        steps = step - self._last_step if self._last_step is not None else self._log_freq
        self._last_step = step
        dims = processor.parallel_dims
        # ntokens_since_last_log counts this rank's batches; data-parallel ranks each see their own
        tokens = processor.ntokens_since_last_log * dims.world_size / dims.non_data_parallel_size
        self._perf.device_name = processor.device_memory_monitor.device_name
        perf = self._perf.interval(
            tokens=tokens,
            seconds=seconds,
            steps=steps,
            world_size=dims.world_size,
            flops=float(processor.num_flops_per_token) * tokens,
        )
        perf.update(self._perf.system() if system is None else system)
        return perf
