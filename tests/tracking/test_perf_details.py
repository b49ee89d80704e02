"""perf.py in detail: accelerator memory through a stand-in torch module (no GPU here: the stand-in carries the
allocator's real counter names), host memory against the kernel's own figures, the exact throughput figures,
the averager's window as docs/options.md defines it, and the utilisation sampler's single daemon thread."""

import os
import resource
import sys
import threading
import time
import types

import psutil
import pytest
from support.threads import threads_started_by

from primus.tracking.measure import perf

MIB = 1 << 20
HOST_KEYS = {"mem/host_rss_gib", "mem/host_peak_rss_gib"}
DEVICE_KEYS = {"mem/allocated_gib", "mem/reserved_gib", "mem/peak_allocated_gib"}


def _stand_in_torch(stats: dict[str, int], available: bool = True) -> types.ModuleType:
    """A torch module with only what device_memory asks of it; a new one per test (availability is cached
    per module object)."""
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: available, memory_stats=lambda: dict(stats))  # type: ignore[attr-defined]
    return torch


ALLOCATOR_STATS = {
    "allocated_bytes.all.current": 3 << 29,  # 1.5 GiB
    "reserved_bytes.all.current": 9 << 28,  # 2.25 GiB
    "allocated_bytes.all.peak": 7 << 28,  # 1.75 GiB
    "active_bytes.all.current": 1 << 30,  # counters the allocator also reports, not ours to log
}


def test_the_allocators_counters_are_logged_in_gib_beside_the_host_figures():
    torch = _stand_in_torch(ALLOCATOR_STATS)
    assert perf.device_memory(torch) == perf.MemoryReading(3 << 29, 9 << 28, 7 << 28)
    m = perf.memory_metrics(torch)
    assert set(m) == HOST_KEYS | DEVICE_KEYS
    assert (m["mem/allocated_gib"], m["mem/reserved_gib"], m["mem/peak_allocated_gib"]) == (1.5, 2.25, 1.75)


def test_a_counter_the_allocator_does_not_report_reads_as_0():
    torch = _stand_in_torch({})  # an allocator that has not allocated yet reports no counters at all
    assert perf.device_memory(torch) == perf.MemoryReading(0, 0, 0)
    m = perf.memory_metrics(torch)
    assert {k: m[k] for k in DEVICE_KEYS} == dict.fromkeys(DEVICE_KEYS, 0.0)


def test_without_an_accelerator_only_host_figures_are_logged():
    torch = _stand_in_torch(ALLOCATOR_STATS, available=False)
    assert perf.device_memory(torch) is None
    assert set(perf.memory_metrics(torch)) == HOST_KEYS


def test_the_imported_torch_is_read_when_no_module_is_given(monkeypatch):
    torch = _stand_in_torch(ALLOCATOR_STATS)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert perf.device_memory() == perf.MemoryReading(3 << 29, 9 << 28, 7 << 28)
    assert perf.memory_metrics()["mem/reserved_gib"] == 2.25


def _touched(size: int) -> bytearray:
    """size bytes that count in RSS: every page written (an untouched allocation is not resident)."""
    block = bytearray(size)
    block[:: resource.getpagesize()] = b"\x01" * len(range(0, size, resource.getpagesize()))
    return block


def _high_water_mark_bytes() -> int:
    """The kernel's peak RSS as /proc/self/status words it (VmHWM, in kB): not the getrusage read perf uses."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_host_rss_is_the_processs_resident_memory_and_follows_an_allocation():
    before = perf.host_rss_bytes()
    ballast = _touched(64 * MIB)
    after = perf.host_rss_bytes()
    assert abs(after - psutil.Process().memory_info().rss) < 4 * MIB
    assert 56 * MIB < after - before < 80 * MIB
    del ballast


def test_host_rss_keeps_one_descriptor_however_often_it_is_read():
    perf.host_rss_bytes()
    open_before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):  # a long run's logged steps
        perf.host_rss_bytes()
    assert len(os.listdir("/proc/self/fd")) <= open_before


def test_a_forked_child_reads_its_own_rss_not_its_parents():
    perf.host_rss_bytes()  # the parent has read (and holds its descriptor) before the fork
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # a DataLoader worker, say: 128 MiB of its own that the parent does not have
        try:
            before = perf.host_rss_bytes()
            ballast = _touched(128 * MIB)
            readings = (before, perf.host_rss_bytes(), psutil.Process().memory_info().rss)
            os.write(write_end, " ".join(map(str, readings)).encode())
            del ballast
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        before, after, child_rss = map(float, pipe.read().split())
    os.waitpid(child, 0)
    assert abs(after - child_rss) < 8 * MIB  # the child's own figure (the parent's descriptor would give the parent's)
    assert after - before > 100 * MIB


def test_host_rss_falls_back_to_psutil_when_statm_cannot_be_read(monkeypatch):
    def unreadable(*_args):
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(os, "pread", unreadable)
    assert abs(perf.host_rss_bytes() - psutil.Process().memory_info().rss) < 4 * MIB


def test_host_peak_rss_is_the_kernels_high_water_mark_and_rises_past_it():
    low, reading, high = _high_water_mark_bytes(), perf.host_peak_rss_bytes(), _high_water_mark_bytes()
    assert low <= reading <= high
    low, gib, high = _high_water_mark_bytes(), perf.memory_metrics()["mem/host_peak_rss_gib"], _high_water_mark_bytes()
    assert low <= gib * perf.GIB <= high
    # grow RSS 64 MiB past the peak: the peak follows
    ballast = _touched(int(reading - psutil.Process().memory_info().rss) + 64 * MIB)
    assert 56 * MIB < perf.host_peak_rss_bytes() - reading < 80 * MIB
    del ballast


@pytest.mark.parametrize(("seconds", "world_size"), [(0.0, 1), (-1.0, 1), (1.0, 0), (1.0, -2)])
def test_no_time_or_no_devices_gives_no_throughput(seconds, world_size):
    assert perf.throughput_metrics(tokens=10, seconds=seconds, world_size=world_size, flops=1e12) == {}


def test_throughput_figures_are_per_device_and_exact():
    m = perf.throughput_metrics(tokens=6000, seconds=2.0, world_size=3, flops=6e15, device_name="NVIDIA H100")
    assert m["perf/tokens_per_sec"] == 3000.0
    assert m["perf/tokens_per_sec_per_gpu"] == 1000.0
    assert m["perf/tflops_per_gpu"] == 1000.0  # 6e15 FLOP over 2 s on 3 devices
    assert m["perf/mfu"] == 1000.0 / 989.4  # the table's H100 bf16 (the default dtype)
    given = perf.throughput_metrics(
        tokens=6000, seconds=2.0, world_size=3, flops=6e15, device_name="NVIDIA H100", given_peak=1250.0
    )
    assert given["perf/mfu"] == 0.8  # the run's peak_tflops wins over the table


def test_without_flops_there_is_no_tflops_nor_mfu():
    m = perf.throughput_metrics(tokens=6000, seconds=2.0, world_size=3, device_name="NVIDIA H100", given_peak=1.0)
    assert m == {"perf/tokens_per_sec": 3000.0, "perf/tokens_per_sec_per_gpu": 1000.0}


def _iteration_ms_after_each(avg: perf.IntervalAverager, entries: int) -> list[float | None]:
    """Adds entries 1..n, entry k one iteration of k seconds; the average iteration time after each."""
    out = []
    for k in range(1, entries + 1):
        avg.add(iterations=1, seconds=float(k), tokens=1.0)
        out.append(avg.averages(world_size=1).get("perf/iteration_time_ms_avg"))
    return out


def test_the_defaults_are_the_documented_ones_skip_2_reset_10():
    # docs/options.md: log_avg_skip_iterations 2, log_avg_reset_interval 10
    got = _iteration_ms_after_each(perf.IntervalAverager(), 13)
    assert got[:3] == [None, None, 3000.0]
    assert got[11] == pytest.approx(sum(range(3, 13)) / 10 * 1e3)  # entries 3..12 fill the window
    assert got[12] == 13000.0  # the 13th starts a new one


def test_a_window_of_one_entry_is_the_latest_interval():
    assert _iteration_ms_after_each(perf.IntervalAverager(skip_iterations=0, reset_interval=1), 3) == [
        1000.0,
        2000.0,
        3000.0,
    ]


@pytest.mark.parametrize(("skip", "reset", "named"), [(-1, 10, "got -1 and 10"), (0, 0, "got 0 and 0")])
def test_bad_settings_are_refused_with_the_values(skip, reset, named):
    with pytest.raises(ValueError, match="skip_iterations must be >= 0 and reset_interval >= 1") as refused:
        perf.IntervalAverager(skip_iterations=skip, reset_interval=reset)
    assert named in str(refused.value)


def test_a_later_clock_restart_counts_as_an_entry_and_brings_no_new_warm_up():
    # the Megatron session restarts the clock (start()) when the iteration goes back, e.g. after a reload
    avg = perf.IntervalAverager(skip_iterations=2, reset_interval=10)
    avg.start()  # entry 1: skipped
    avg.add(iterations=1, seconds=100.0, tokens=1.0)  # entry 2: skipped
    avg.add(iterations=1, seconds=1.0, tokens=1.0)  # entry 3: the window's first
    avg.start()  # entry 4: adds nothing
    avg.add(iterations=1, seconds=3.0, tokens=1.0)  # entry 5: averaged, warm-up is long past
    assert avg.averages(world_size=1)["perf/iteration_time_ms_avg"] == 2000.0


def test_a_new_window_starts_every_sum_from_zero():
    avg = perf.IntervalAverager(skip_iterations=0, reset_interval=2)
    avg.add(iterations=1, seconds=1.0, tokens=100.0, flops=2e12)
    avg.add(iterations=1, seconds=1.0, tokens=100.0, flops=2e12)
    avg.add(iterations=1, seconds=2.0, tokens=10.0)  # a new window, with no FLOPs known
    assert avg.averages(world_size=1) == {"perf/iteration_time_ms_avg": 2000.0, "perf/tokens_per_sec_per_gpu_avg": 5.0}


def test_averages_over_log_intervals_are_ratios_of_sums_per_device():
    avg = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    avg.add(iterations=5, seconds=2.0, tokens=4000.0, flops=8e15)
    avg.add(iterations=5, seconds=6.0, tokens=4000.0, flops=24e15)
    a = avg.averages(world_size=2)
    assert a["perf/iteration_time_ms_avg"] == pytest.approx(800.0)  # 8 s over 10 iterations
    assert a["perf/tokens_per_sec_per_gpu_avg"] == 500.0  # 8000 tokens in 8 s on 2 devices
    assert a["perf/tflops_per_gpu_avg"] == 2000.0  # 32e15 FLOP in 8 s on 2 devices


def test_averages_of_a_short_window_and_of_intervals_too_short_to_time():
    short = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    short.add(iterations=1, seconds=0.5, tokens=10.0)
    assert short.averages(world_size=1) == {
        "perf/iteration_time_ms_avg": 500.0,
        "perf/tokens_per_sec_per_gpu_avg": 20.0,
    }
    untimed = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    untimed.add(iterations=1, seconds=0.0, tokens=10.0)  # the clock did not move
    assert untimed.averages(world_size=1) == {}
    no_iterations = perf.IntervalAverager(skip_iterations=0, reset_interval=10)
    no_iterations.add(iterations=0, seconds=1.0, tokens=0.0)
    assert no_iterations.averages(world_size=1) == {}


def _sampling_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "primus-utilisation"}


def test_one_sampling_thread_serves_every_read():
    earlier = _sampling_threads()
    u = perf.Utilisation(interval_s=0.01)
    first = u.read()
    deadline = time.monotonic() + 30
    while u.read() is first and time.monotonic() < deadline:  # the thread replaces the reading whole
        time.sleep(0.01)
    for _ in range(5):  # more logged steps, across several samples
        assert "sys/cpu_util_pct" in u.read()
        time.sleep(0.02)
    assert len(_sampling_threads() - earlier) == 1


def test_the_first_read_starts_one_daemon_sampling_thread_named_for_it():
    """Named for py-spy and faulthandler dumps; a daemon, so a trainer that ends with its Utilisation still
    referenced exits."""
    u = perf.Utilisation(interval_s=0.05)
    assert threads_started_by(u.read) == [("primus-utilisation", True)]


# StepPerf: the one perf-figures class every backend maps upstream's values onto


def test_a_step_intervals_figures_are_exact_with_the_runs_peak():
    step = perf.StepPerf(dtype="bf16", device_name="a device of no datasheet", peak_tflops=2000.0)
    assert step.interval(tokens=8000, seconds=2.0, steps=4, world_size=4, flops=8e15) == {
        "perf/tokens_per_sec": 4000.0,
        "perf/tokens_per_sec_per_gpu": 1000.0,
        "perf/tflops_per_gpu": 1000.0,  # 8e15 FLOP over 2 s on 4 devices
        "perf/mfu": 0.5,
        "perf/iteration_time_ms": 500.0,  # 2 s over 4 steps
    }


def test_a_step_intervals_mfu_is_against_the_datasheet_for_the_device_and_dtype_without_a_peak():
    step = perf.StepPerf(dtype="fp8", device_name="NVIDIA H100 80GB HBM3")
    m = step.interval(tokens=8000, seconds=2.0, steps=1, world_size=4, flops=8e15)
    assert m["perf/mfu"] == 1000.0 / 1978.9  # the H100's fp8 peak, not its bf16 one
    assert m["perf/iteration_time_ms"] == 2000.0


def test_a_step_interval_without_a_known_peak_or_flops_has_no_mfu():
    unknown = perf.StepPerf(dtype="bf16", device_name="a device of no datasheet")
    assert unknown.interval(tokens=100, seconds=0.5, steps=2, world_size=1, flops=1e12) == {
        "perf/tokens_per_sec": 200.0,
        "perf/tokens_per_sec_per_gpu": 200.0,
        "perf/tflops_per_gpu": 2.0,
        "perf/iteration_time_ms": 250.0,
    }
    no_flops = perf.StepPerf(dtype="bf16", device_name="NVIDIA H100", peak_tflops=1.0)
    assert set(no_flops.interval(tokens=100, seconds=0.5, steps=2, world_size=1, flops=None)) == {
        "perf/tokens_per_sec",
        "perf/tokens_per_sec_per_gpu",
        "perf/iteration_time_ms",
    }


@pytest.mark.parametrize(("steps", "seconds"), [(0, 2.0), (-1, 2.0)])
def test_the_time_per_step_needs_steps(steps, seconds):
    m = perf.StepPerf(dtype="bf16").interval(tokens=100, seconds=seconds, steps=steps, world_size=1, flops=None)
    assert m == {"perf/tokens_per_sec": 50.0, "perf/tokens_per_sec_per_gpu": 50.0}


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_an_interval_the_clock_did_not_time_gives_nothing(seconds):
    step = perf.StepPerf(dtype="bf16", peak_tflops=1.0)
    assert step.interval(tokens=100, seconds=seconds, steps=1, world_size=1, flops=1e12) == {}


class _StandInNvml:
    """What Utilisation asks of NVML, for one device of a given utilisation; counts the device look-ups."""

    def __init__(self, monkeypatch, gpu_util: int):
        self.ordinals: list[int] = []
        pynvml = types.ModuleType("pynvml")
        pynvml.nvmlDeviceGetUtilizationRates = lambda handle: types.SimpleNamespace(gpu=gpu_util)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "pynvml", pynvml)
        monkeypatch.setattr(perf, "nvml_handle", self._handle)

    def _handle(self, ordinal, environ):
        self.ordinals.append(ordinal)
        return object()


def test_a_steps_system_figures_are_memory_device_memory_and_utilisation(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch(ALLOCATOR_STATS))
    _StandInNvml(monkeypatch, gpu_util=42)
    jax_memory = {"mem/bytes_in_use_gib": 3.5, "mem/bytes_limit_gib": 80.0}
    m = perf.StepPerf(dtype="bf16", visible_ordinal=0, device_memory=lambda: dict(jax_memory)).system()
    assert set(m) == HOST_KEYS | DEVICE_KEYS | set(jax_memory) | {
        "sys/cpu_util_pct",
        "sys/host_mem_used_pct",
        "sys/gpu_util_pct",
    }
    assert (m["mem/allocated_gib"], m["mem/reserved_gib"], m["mem/peak_allocated_gib"]) == (1.5, 2.25, 1.75)
    assert {k: m[k] for k in jax_memory} == jax_memory
    assert m["sys/gpu_util_pct"] == 42.0
    assert m["mem/host_rss_gib"] > 0 and m["mem/host_peak_rss_gib"] > 0  # the kernel updates the peak lazily


def test_a_steps_system_figures_without_an_accelerator_or_device_memory_reader(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _stand_in_torch(ALLOCATOR_STATS, available=False))
    monkeypatch.setattr(perf, "nvml_handle", lambda ordinal, environ: None)
    monkeypatch.setattr(perf, "amdsmi_handle", lambda ordinal, environ: None)
    assert set(perf.StepPerf(dtype="bf16").system()) == HOST_KEYS | {"sys/cpu_util_pct", "sys/host_mem_used_pct"}


def test_begin_finds_the_visible_device_and_takes_the_first_reading(monkeypatch):
    nvml = _StandInNvml(monkeypatch, gpu_util=7)
    step = perf.StepPerf(dtype="bf16", visible_ordinal=3)
    assert threads_started_by(step.begin) == [("primus-utilisation", True)]
    assert nvml.ordinals == [3]  # JAX's local device, found once at begin(), not the local rank's
    assert step.system()["sys/gpu_util_pct"] == 7.0
    assert nvml.ordinals == [3]


def test_a_steps_system_figures_read_the_hosts_memory_on_the_sampling_thread_only(monkeypatch):
    """~50 µs of system calls per logged step on a VM: the training thread gets the latest sample instead."""
    readers: list[str] = []
    real = perf.host_rss_bytes

    def host_rss_bytes():
        readers.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(perf, "host_rss_bytes", host_rss_bytes)
    step = perf.StepPerf(dtype="bf16")
    step._utilisation._interval_s = 0.01
    step.begin()  # the first sample, on the training thread, once
    readers.clear()
    deadline = time.monotonic() + 30
    while not readers and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(5):
        assert HOST_KEYS <= set(step.system())
    assert readers and set(readers) == {"primus-utilisation"}
