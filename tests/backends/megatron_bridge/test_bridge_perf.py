"""The perf set on Megatron-Bridge (primus/backends/megatron_bridge/step_perf.py): the mapping from Bridge's host
counters. On the real training: test_bridge_tracking_end_to_end.py (its TFLOP/s against Bridge's own)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from primus.backends.megatron_bridge.step_perf import BridgePerf


def _perf(system: bool = False, peak: float | None = None, **model) -> BridgePerf:
    config = SimpleNamespace(**{"bf16": False, "fp16": False, "fp8": None, **model})
    return BridgePerf(config, world_size=4, peak_tflops=peak, system=system, skip_iterations=0, reset_interval=10)


def test_the_first_log_step_only_starts_the_clock_then_each_interval_is_bridges_counters_over_the_wall_time():
    perf = _perf(peak=100.0)
    assert perf.at(2, 10.0, consumed_samples=16, flops_so_far=2e15, seq_length=128) == {}
    out = perf.at(4, 12.0, consumed_samples=48, flops_so_far=10e15, seq_length=128)
    tokens = (48 - 16) * 128
    assert out["perf/tokens_per_sec"] == tokens / 2.0
    assert out["perf/tokens_per_sec_per_gpu"] == tokens / 2.0 / 4
    assert out["perf/tflops_per_gpu"] == pytest.approx(8e15 / 2.0 / 4 / 1e12)  # 1000 TFLOP/s per device
    assert out["perf/mfu"] == pytest.approx(1000 / 100.0)  # against the run's peak_tflops
    assert out["perf/iteration_time_ms"] == 1000.0  # two steps in two seconds
    assert out["perf/tflops_per_gpu_avg"] == pytest.approx(out["perf/tflops_per_gpu"])
    assert not any(name.startswith(("mem/", "sys/")) for name in out)  # the perf set's system figures are off


def test_a_flops_counter_that_is_not_a_number_gives_no_tflops_and_is_never_read():
    class Tensor:  # what a device value would be: reading it would wait for the device
        def __float__(self):
            raise AssertionError("read")

    perf = _perf()
    perf.at(1, 0.0, consumed_samples=2, flops_so_far=Tensor(), seq_length=8)
    out = perf.at(2, 1.0, consumed_samples=4, flops_so_far=Tensor(), seq_length=8)
    assert out["perf/tokens_per_sec"] == 16.0 and "perf/tflops_per_gpu" not in out


def test_an_interval_without_a_flops_count_does_not_dilute_the_average_tflops():
    """The counter is a number, then (one log step) not: that interval adds tokens/s time but no FLOPs, so the
    average TFLOP/s stays the counted intervals' (a 0 added for it would halve it here)."""
    perf = _perf()
    perf.at(1, 0.0, consumed_samples=0, flops_so_far=0, seq_length=8)
    counted = perf.at(2, 1.0, consumed_samples=4, flops_so_far=4e12, seq_length=8)
    uncounted = perf.at(3, 2.0, consumed_samples=8, flops_so_far=None, seq_length=8)
    assert counted["perf/tflops_per_gpu"] == pytest.approx(1.0) and "perf/tflops_per_gpu" not in uncounted
    assert uncounted["perf/tflops_per_gpu_avg"] == pytest.approx(1.0)  # 4e12 FLOP in 1 s on 4 devices
    assert uncounted["perf/tokens_per_sec_per_gpu_avg"] == pytest.approx(64 / 2.0 / 4)  # both intervals' time


def test_no_mfu_without_a_known_peak_and_the_system_figures_with_the_perf_set():
    perf = _perf(system=True)  # no accelerator here: no device name, no table peak
    perf.at(1, 0.0, consumed_samples=2, flops_so_far=0, seq_length=8)
    out = perf.at(2, 1.0, consumed_samples=4, flops_so_far=1e12, seq_length=8)
    assert "perf/mfu" not in out and out["perf/tflops_per_gpu"] == pytest.approx(0.25)
    assert {"mem/host_rss_gib", "sys/cpu_util_pct", "sys/host_mem_used_pct"} <= set(out)
