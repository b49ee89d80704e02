"""metrics.peak_tflops: a field of upstream's metrics config, validated before training, and the peak Primus's
perf/mfu is measured against (over the built-in table; MFU on a device the table does not know)."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from types import SimpleNamespace

import pytest

from primus.backends.torchtitan.metrics_options import primus_config_class
from primus.backends.torchtitan.step_perf import ProcessorPerf
from primus.backends.torchtitan.tracking_plan import plan_tracking
from primus.tracking.plan import TrackingPlanError


@dataclass(kw_only=True, slots=True)
class UpstreamMetrics:
    log_freq: int = 10
    enable_tensorboard: bool = False
    enable_wandb: bool = False
    save_tb_folder: str = "tb"
    save_for_all_ranks: bool = False


def test_peak_tflops_is_a_metrics_field_defaulting_to_the_table():
    cls = primus_config_class(UpstreamMetrics)
    assert "peak_tflops" in {f.name for f in fields(cls)}
    assert cls().peak_tflops is None and cls(peak_tflops=835.5).peak_tflops == 835.5


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "fast", True])
def test_a_bad_peak_is_refused_before_training(tmp_path, bad):
    metrics = primus_config_class(UpstreamMetrics)(enable_tensorboard=True, peak_tflops=bad)
    with pytest.raises(TrackingPlanError, match=r"metrics.peak_tflops=.* is invalid: expected float > 0 and "
                                                r"<= 1000000.0 or null \(Dense peak TFLOP/s of one device"):
        plan_tracking(metrics, dump_folder=str(tmp_path), checkpoint_dir=None, rank=0)


def processor(device_name: str):
    """The counters ProcessorPerf reads from upstream's MetricsProcessor: 1000 tokens per 1 s, 1e9 FLOPs per token."""
    return SimpleNamespace(time_last_log=time.perf_counter() - 1.0, ntokens_since_last_log=1000,
                           parallel_dims=SimpleNamespace(world_size=1, non_data_parallel_size=1),
                           num_flops_per_token=1e9, device_memory_monitor=SimpleNamespace(device_name=device_name))


def measure(perf: ProcessorPerf, device_name: str) -> dict[str, float]:
    """Log step 1's perf set: read from the processor at the step, made as the hub's thread makes it."""
    counters = processor(device_name)
    return perf.figures(1, counters.parallel_dims, perf.read(counters, time.perf_counter()))


def test_mfu_against_the_given_peak_else_the_table_else_none():
    given = measure(ProcessorPerf("bfloat16", log_freq=1, peak_tflops=2.0), "CPU")
    assert given["perf/mfu"] == pytest.approx(given["perf/tflops_per_gpu"] / 2.0)
    assert "perf/mfu" not in measure(ProcessorPerf("bfloat16", log_freq=1), "CPU")
    table = measure(ProcessorPerf("bfloat16", log_freq=1), "NVIDIA H100 NVL")
    assert table["perf/mfu"] == pytest.approx(table["perf/tflops_per_gpu"] / 835.5)
