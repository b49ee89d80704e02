"""The perf/memory/utilisation set (``mlflow_upload_performance_metrics``), measured at a log step from
the counters upstream's ``MetricsProcessor`` keeps (tokens and wall time since the last log) before it
resets them: host-side values only, no device synchronisation.

Unlike upstream's ``tflops``/``mfu(%)``, MFU here uses the device's datasheet peak and is left out when
the peak is unknown (upstream falls back to an A100's, which gives CPUs and new GPUs a wrong MFU)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from primus.tracking.perf import Utilisation, memory_metrics, throughput_metrics

_DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


class StepPerf:
    def __init__(self, dtype: str, log_freq: int, peak_tflops: float | None = None):
        self._dtype = _DTYPES.get(dtype, dtype)
        self._peak = peak_tflops  # the run's metrics.peak_tflops, over the table's
        self._log_freq = log_freq  # the steps upstream counts for the first log (as its end_to_end(s))
        self._utilisation = Utilisation()
        # upstream's Trainer has set its device before it builds the metric logger: find the device and start
        # sampling now, once, rather than in the first logged step (~4 ms there: NVML/amdsmi are looked up)
        self._utilisation.read()
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
        perf = throughput_metrics(
            tokens=tokens,
            seconds=seconds,
            world_size=dims.world_size,
            flops=float(processor.num_flops_per_token) * tokens,
            device_name=processor.device_memory_monitor.device_name,
            dtype=self._dtype,
            given_peak=self._peak,
        )
        if steps > 0 and seconds > 0:
            perf["perf/iteration_time_ms"] = seconds / steps * 1e3
        if system is None:  # into this step's dict: no intermediate dicts
            perf.update(memory_metrics())
            perf.update(self._utilisation.read())
        else:
            perf.update(system)
        return perf
