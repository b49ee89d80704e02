import math

import pytest

from primus.tracking import perf


def test_peak_prefers_the_most_specific_device_name():
    assert perf.peak_tflops("NVIDIA H100 PCIe", "bf16") == 756.0
    assert perf.peak_tflops("NVIDIA H100 80GB HBM3", "bfloat16") == 989.4
    assert perf.peak_tflops("AMD Instinct MI300X", "fp8") == 2614.9


@pytest.mark.parametrize("device,dtype", [(None, "bf16"), ("cpu", "fp32"), ("NVIDIA V100", "bf16"), ("Mystery X1", "bf16")])
def test_unknown_peak_is_none(device, dtype):
    assert perf.peak_tflops(device, dtype) is None


def test_throughput_per_device_and_mfu():
    m = perf.throughput_metrics(tokens=8192, seconds=2.0, world_size=4, flops=4e15, device_name="NVIDIA A100-SXM4-80GB",
                                dtype="bf16")
    assert m["perf/tokens_per_sec"] == 4096
    assert m["perf/tokens_per_sec_per_gpu"] == 1024
    assert m["perf/tflops_per_gpu"] == pytest.approx(500.0)
    assert m["perf/mfu"] == pytest.approx(500.0 / 312.0)


def test_mfu_is_omitted_when_the_peak_is_unknown():
    m = perf.throughput_metrics(tokens=10, seconds=1.0, world_size=1, flops=1e12, device_name="cpu", dtype="fp32")
    assert m["perf/tflops_per_gpu"] == pytest.approx(1.0)
    assert "perf/mfu" not in m


def test_throughput_of_an_empty_interval_is_nothing():
    assert perf.throughput_metrics(tokens=10, seconds=0.0, world_size=1) == {}


def test_averager_skips_warmup_and_uses_ratio_of_sums():
    avg = perf.IntervalAverager(skip_iterations=2, reset_interval=100)
    avg.add(iterations=1, seconds=50.0, tokens=10)  # warm-up: compile, allocator growth
    avg.add(iterations=1, seconds=50.0, tokens=10)
    assert avg.averages(world_size=1) == {}
    avg.add(iterations=1, seconds=1.0, tokens=1000)  # 1000 tok/s
    avg.add(iterations=1, seconds=3.0, tokens=1000)  # 333 tok/s
    a = avg.averages(world_size=2)
    # 2000 tokens in 4 s over 2 devices; the arithmetic mean of rates would say 333 per device
    assert a["perf/tokens_per_sec_per_gpu_avg"] == pytest.approx(250.0)
    assert a["perf/iteration_time_ms_avg"] == pytest.approx(2000.0)
    assert "perf/tflops_per_gpu_avg" not in a


def test_averager_resets_after_the_interval():
    avg = perf.IntervalAverager(skip_iterations=0, reset_interval=2)
    for seconds in (1.0, 1.0, 5.0):
        avg.add(iterations=1, seconds=seconds, tokens=10, flops=1e12)
    a = avg.averages(world_size=1)
    assert a["perf/iteration_time_ms_avg"] == pytest.approx(5000.0)
    assert a["perf/tflops_per_gpu_avg"] == pytest.approx(0.2)


def test_averager_rejects_bad_settings():
    with pytest.raises(ValueError, match="reset_interval"):
        perf.IntervalAverager(skip_iterations=0, reset_interval=0)


def test_memory_on_cpu_reports_host_rss_only():
    import psutil

    ballast = bytearray(64 << 20)  # 64 MiB that RSS must see
    m = perf.memory_metrics()
    assert set(m) == {"mem/host_rss_gib", "mem/host_peak_rss_gib"}
    rss = psutil.Process().memory_info().rss / perf.GIB
    assert math.isclose(m["mem/host_rss_gib"], rss, rel_tol=0.05)
    assert m["mem/host_peak_rss_gib"] >= m["mem/host_rss_gib"] * 0.95
    del ballast


def test_utilisation_on_cpu_has_host_figures_and_no_gpu():
    u = perf.Utilisation().read()
    assert 0.0 <= u["sys/cpu_util_pct"] <= 100.0 * (__import__("os").cpu_count() or 1)
    assert 0.0 < u["sys/host_mem_used_pct"] < 100.0
    assert "sys/gpu_util_pct" not in u


def test_every_name_perf_produces_is_in_the_documented_schema():
    from primus.tracking.names import SCHEMA

    avg = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    avg.add(iterations=1, seconds=1.0, tokens=10, flops=1e12)
    produced = {
        **perf.throughput_metrics(tokens=10, seconds=1.0, world_size=1, flops=1e12, device_name="H100", dtype="bf16"),
        **avg.averages(world_size=1), **perf.memory_metrics(), **perf.Utilisation().read(),
        "perf/iteration_time_ms": 1.0,  # added by the backends beside throughput_metrics
    }
    assert set(produced) - set(SCHEMA) == set()


def test_utilisation_is_read_by_its_own_thread_which_ends_with_it():
    import gc
    import threading
    import time

    u = perf.Utilisation(interval_s=0.01)
    u._latest = {"stale": 1.0}  # what a logged step gets until the thread reads again
    deadline = time.monotonic() + 10
    while "stale" in u.read() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "sys/cpu_util_pct" in u.read()
    thread = next(t for t in threading.enumerate() if t.name == "primus-utilisation")
    del u
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()
