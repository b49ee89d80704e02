import math

import pytest

from primus.tracking.measure import perf


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


def test_averager_leaves_intervals_of_unknown_flops_out_of_the_tflops_average():
    """A window's TFLOP/s is the known FLOPs over the time they took: an interval whose FLOPs the trainer could
    not count (None) adds neither, where a 0 would halve the figure here; tokens/s still counts its time."""
    avg = perf.IntervalAverager(skip_iterations=0, reset_interval=100)
    avg.add(iterations=1, seconds=1.0, tokens=100.0, flops=2e12)
    avg.add(iterations=1, seconds=1.0, tokens=100.0, flops=None)
    a = avg.averages(world_size=1)
    assert a["perf/tflops_per_gpu_avg"] == pytest.approx(2.0)
    assert a["perf/tokens_per_sec_per_gpu_avg"] == pytest.approx(100.0)
    unknown = perf.IntervalAverager(skip_iterations=0, reset_interval=100)
    unknown.add(iterations=1, seconds=1.0, tokens=100.0, flops=None)
    assert "perf/tflops_per_gpu_avg" not in unknown.averages(world_size=1)


def _averages_per_log_step(log_interval: int, skip: int, reset: int, log_steps: int) -> dict[int, float | None]:
    """Feed the averager as the Megatron session does: the first log step starts the clock, each later
    one adds its interval; the interval ending at iteration k takes k seconds. Returns the average
    iteration time (ms) after each log step, None while there is none."""
    avg = perf.IntervalAverager(skip_iterations=skip, reset_interval=reset)
    out = {}
    for entry in range(1, log_steps + 1):
        iteration = entry * log_interval
        if entry == 1:
            avg.start()
        else:
            avg.add(iterations=log_interval, seconds=float(iteration), tokens=1.0)
        out[iteration] = avg.averages(world_size=1).get("perf/iteration_time_ms_avg")
    return out


def test_averages_start_at_iteration_skip_plus_one_and_reset_every_n_entries_at_log_interval_1():
    # skip 2: iterations 1 (clock start) and 2 left out, the average starts at iteration 3;
    # reset 3: windows {3,4,5}, then {6,7,8}. Interval k lasts k s over 1 iteration.
    assert _averages_per_log_step(log_interval=1, skip=2, reset=3, log_steps=8) == pytest.approx({
        1: None, 2: None, 3: 3000.0, 4: 3500.0, 5: 4000.0, 6: 6000.0, 7: 6500.0, 8: 7000.0})


def test_skip_and_reset_count_log_entries_not_iterations_at_log_interval_5():
    # log steps at 5 (clock start), 10, 15, ...: skip 2 leaves out the entries at 5 and 10; reset 2 starts
    # the window over every 2 entries ({15,20}, {25,30}), although 2 iterations pass long before.
    # Interval ending at k lasts k s over 5 iterations.
    assert _averages_per_log_step(log_interval=5, skip=2, reset=2, log_steps=6) == pytest.approx({
        5: None, 10: None, 15: 3000.0, 20: 3500.0, 25: 5000.0, 30: 5500.0})


def test_skip_0_averages_from_the_first_measured_interval():
    assert _averages_per_log_step(log_interval=2, skip=0, reset=10, log_steps=3) == pytest.approx({
        2: None, 4: 2000.0, 6: 2500.0})


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

    m = perf.memory_metrics()  # RSS following an allocation: test_perf_details.py
    assert set(m) == {"mem/host_rss_gib", "mem/host_peak_rss_gib"}
    rss = psutil.Process().memory_info().rss / perf.GIB
    assert math.isclose(m["mem/host_rss_gib"], rss, rel_tol=0.05)
    assert m["mem/host_peak_rss_gib"] >= m["mem/host_rss_gib"] * 0.95
    total_gib = psutil.virtual_memory().total / perf.GIB
    assert m["mem/host_peak_rss_gib"] <= total_gib and m["mem/host_rss_gib"] <= total_gib  # GiB, not bytes


def test_utilisation_on_cpu_has_host_figures_and_no_gpu():
    u = perf.Utilisation().read()
    assert 0.0 <= u["sys/cpu_util_pct"] <= 100.0 * (__import__("os").cpu_count() or 1)
    assert 0.0 < u["sys/host_mem_used_pct"] < 100.0
    assert "sys/gpu_util_pct" not in u


def test_every_name_perf_produces_is_in_the_documented_schema():
    from primus.tracking.measure.names import SCHEMA

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
    assert "sys/cpu_util_pct" in u.read()
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


def test_interval_perf_times_each_interval_between_log_steps_and_averages_them():
    """The interval's figures from the job's tokens and FLOPs over its host time; the first log step and one not
    after the last (a restart in the same process) only start the clock; an interval whose FLOPs are not known has
    no TFLOP/s and leaves the average's as it was; the averages skip the first entry and restart every two."""
    asked = []

    def amounts(steps):
        asked.append(steps)
        return steps * 1000.0, (steps * 4e12 if len(asked) != 2 else None)

    interval = perf.IntervalPerf(perf.StepPerf(dtype="bf16", peak_tflops=100.0), world_size=2, skip_iterations=1,
                                 reset_interval=2)
    assert interval.at(10, 100.0, amounts) is None and asked == []
    assert interval.at(12, 104.0, amounts) == pytest.approx({
        "perf/tokens_per_sec": 500.0, "perf/tokens_per_sec_per_gpu": 250.0, "perf/tflops_per_gpu": 1.0,
        "perf/mfu": 0.01, "perf/iteration_time_ms": 2000.0, "perf/iteration_time_ms_avg": 2000.0,
        "perf/tokens_per_sec_per_gpu_avg": 250.0, "perf/tflops_per_gpu_avg": 1.0})
    assert interval.at(13, 109.0, amounts) == pytest.approx({  # FLOPs not known: the TFLOP/s average stays 1.0
        "perf/tokens_per_sec": 200.0, "perf/tokens_per_sec_per_gpu": 100.0, "perf/iteration_time_ms": 5000.0,
        "perf/iteration_time_ms_avg": 3000.0, "perf/tokens_per_sec_per_gpu_avg": 3000.0 / 9 / 2,
        "perf/tflops_per_gpu_avg": 1.0})
    assert interval.at(13, 110.0, amounts) is None  # not after the last: the clock starts again
    assert interval.at(15, 112.0, amounts) == pytest.approx({  # the window of two entries starts over
        "perf/tokens_per_sec": 1000.0, "perf/tokens_per_sec_per_gpu": 500.0, "perf/tflops_per_gpu": 2.0,
        "perf/mfu": 0.02, "perf/iteration_time_ms": 1000.0, "perf/iteration_time_ms_avg": 1000.0,
        "perf/tokens_per_sec_per_gpu_avg": 500.0, "perf/tflops_per_gpu_avg": 2.0})
    assert asked == [2, 1, 2]


def test_the_tflops_average_counts_only_known_flops_over_their_own_seconds():
    averager = perf.IntervalAverager(skip_iterations=0, reset_interval=1)
    averager.add(iterations=1, seconds=1.0, tokens=1.0, flops=2.0)
    assert averager.averages(1)["perf/tflops_per_gpu_avg"] == pytest.approx(2e-12, abs=0)  # from zero FLOPs
    averager.add(iterations=1, seconds=1.0, tokens=1.0, flops=3.0)  # a new window: from zero again
    assert averager.averages(1)["perf/tflops_per_gpu_avg"] == pytest.approx(3e-12, abs=0)
    averager = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    averager.add(iterations=1, seconds=1.0, tokens=1.0, flops=0.0)
    assert "perf/tflops_per_gpu_avg" not in averager.averages(1)  # no FLOPs counted: no figure, not a 0
    averager = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    averager.add(iterations=1, seconds=0.0, tokens=1.0, flops=5.0)  # FLOPs over no time of their own
    averager.add(iterations=1, seconds=1.0, tokens=1.0, flops=None)
    assert "perf/tflops_per_gpu_avg" not in averager.averages(1)
