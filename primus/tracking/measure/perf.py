"""Performance metrics computed from structured values (never from printed text).

Everything here works on numbers the backend already has at a log step — tokens in the interval,
the interval's wall time, the model FLOPs per step — so no device synchronisation is added on
non-log steps. Averages of rates are ratio-of-sums over a window (the harmonic mean of the
per-step rates weighted by time), never arithmetic means of rates.
"""

from __future__ import annotations

import functools
import os
import resource
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from primus.tracking.measure.devices import amdsmi_handle, local_ordinal, nvml_handle
from primus.tracking.measure.gpu_power import ENERGY, GpuPower, joules_per_token
from primus.tracking.measure.sampling_threads import sample_every

GIB = float(1 << 30)
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# Dense (no sparsity) peak TFLOP/s per device, by dtype, from vendors' datasheets (their "with sparsity"
# figures halved). A device or dtype missing here has no MFU unless the run gives its peak (peak_tflops):
# "unknown" is omitted, never guessed (an A100 fallback gave users 500 % MFU). Keys are matched as
# case-insensitive substrings of the device name as torch/JAX report it, first match wins, so a more specific
# key comes before the key it contains ("GB200" before "B200", "H100 NVL" before "H100").
PEAK_TFLOPS: tuple[tuple[str, Mapping[str, float]], ...] = (
    # NVIDIA GB200 NVL72 datasheet, per GPU (/72): FP16/BF16 360 PF, FP8 720 PF, TF32 180 PF with sparsity
    ("GB200", {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "tf32": 1250.0}),
    # NVIDIA HGX/DGX B200 datasheet, per GPU: FP16/BF16 4.5 PF, FP8 9 PF, TF32 2.2 PF with sparsity
    ("B200", {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0}),
    # NVIDIA H100/H200 datasheets, NVL (PCIe, 350-600 W) column: BF16/FP16 1,671 TF, FP8 3,341 TF, TF32 835 TF
    # with sparsity, FP32 60 TF — not the SXM part's 1,979 TF
    ("H100 NVL", {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5, "tf32": 417.5, "fp32": 60.0}),
    ("H200 NVL", {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5, "tf32": 417.5, "fp32": 60.0}),
    # SXM column: BF16/FP16 1,979 TF, FP8 3,958 TF, TF32 989 TF with sparsity, FP32 67 TF (also GH200's GPU)
    ("H200", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("H100 PCIe", {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.2}),
    ("H100", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("H800", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("A800", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("L40S", {"bf16": 362.0, "fp16": 362.0, "fp8": 733.0, "tf32": 183.0, "fp32": 91.6}),
    ("A10G", {"bf16": 70.0, "fp16": 70.0, "tf32": 35.0, "fp32": 31.2}),
    ("V100", {"fp16": 125.0, "fp32": 15.7}),
    # AMD Instinct MI355X datasheet: FP16/BF16 2.5 PF (2,516.6 TF), FP8 5.0 PF dense, FP32 157.3 TF; CDNA 4 has
    # no TF32 matrix unit (emulated in software), so no tf32 peak
    ("MI355X", {"bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.2, "fp32": 157.3}),
    # MI325X and MI300X datasheets (same compute): FP16/BF16 1,307.4 TF, FP8 2,614.9 TF, TF32 653.7 TF dense,
    # FP32 matrix 163.4 TF
    ("MI325X", {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}),
    ("MI300X", {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}),
    # MI250X datasheet: FP16/BF16 383 TF, FP32 matrix 95.7 TF for the module, which holds two GCDs that torch
    # sees as two devices (each rank drives one): per device, half
    ("MI250X", {"bf16": 191.5, "fp16": 191.5, "fp32": 47.9}),
)

_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8": "fp8",
    "e4m3": "fp8",
    "hybrid": "fp8",
}


@functools.lru_cache(maxsize=64)  # asked at every logged step with the same device and dtype
def peak_tflops(device_name: str | None, dtype: str) -> float | None:
    """Peak dense TFLOP/s of one device for a dtype, or None when not known."""
    if not device_name:
        return None
    dtype = _DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
    name = device_name.upper()
    for key, table in PEAK_TFLOPS:
        if key.upper() in name:
            return table.get(dtype)
    return None


def throughput_metrics(
    *,
    tokens: float,
    seconds: float,
    world_size: int,
    flops: float | None = None,
    device_name: str | None = None,
    dtype: str = "bf16",
    given_peak: float | None = None,
) -> dict[str, float]:
    """tokens/s (total and per device), TFLOP/s per device and MFU for one interval.

    ``tokens`` and ``flops`` cover the whole job (all devices) over ``seconds`` of wall time, so the per-device
    figures are the job's, not one rank's. MFU is against ``given_peak`` (the run's peak_tflops option) when
    given, else the table's peak for the device and ``dtype``, and absent when neither is known."""
    if seconds <= 0 or world_size <= 0:
        return {}
    out = {
        "perf/tokens_per_sec": tokens / seconds,
        "perf/tokens_per_sec_per_gpu": tokens / seconds / world_size,
    }
    if flops is not None:
        tflops = flops / seconds / world_size / 1e12
        out["perf/tflops_per_gpu"] = tflops
        peak = given_peak or peak_tflops(device_name, dtype)
        if peak:
            out["perf/mfu"] = tflops / peak
    return out


class StepPerf:
    """The perf set of one log interval, one class for every backend (each maps upstream's values onto it):
    throughput from what the interval consumed (the job's tokens and model FLOPs, its wall time and steps), and
    the system figures (host and device memory, host and device utilisation). Host numbers at a log step only: no
    device value is read. ``device_name`` and ``dtype`` pick the datasheet peak for MFU unless ``peak_tflops`` is
    given; ``device_memory`` reads a framework's allocator counters (JAX's) where torch's are not the ones."""

    def __init__(
        self,
        *,
        dtype: str,
        device_name: str | None = None,
        peak_tflops: float | None = None,
        visible_ordinal: int | None = None,
        device_memory: Callable[[], Mapping[str, float]] | None = None,
    ):
        self.device_name = device_name
        self._dtype = dtype
        self._peak = peak_tflops
        self._device_memory = device_memory
        self._utilisation = Utilisation(visible_ordinal)
        self._energy_since: float | None = None  # the device's gpu/energy_j at the last interval

    def begin(self) -> None:
        """Upstream has picked its device: find it and take the first reading now, once, rather than in the
        first logged step (~4 ms there: NVML/amdsmi are looked up)."""
        self._utilisation.read()

    def interval(
        self, *, tokens: float, seconds: float, steps: int, world_size: int, flops: float | None
    ) -> dict[str, float]:
        """tokens/s, TFLOP/s, MFU and the time per step of an interval of ``steps`` steps."""
        out = throughput_metrics(
            tokens=tokens,
            seconds=seconds,
            world_size=world_size,
            flops=flops,
            device_name=self.device_name,
            dtype=self._dtype,
            given_peak=self._peak,
        )
        if steps > 0 and seconds > 0:
            out["perf/iteration_time_ms"] = seconds / steps * 1e3
        energy = self._utilisation.sampled().get(ENERGY)  # as last sampled; none unless the system figures are on
        if energy is not None and self._energy_since is not None:
            per_token = joules_per_token(energy, self._energy_since, tokens, world_size)
            if per_token is not None:
                out["perf/joules_per_token"] = per_token
        self._energy_since = energy
        return out

    def system(self) -> dict[str, float]:
        """This rank's memory and utilisation (every tracker gets them, as every other figure): the device's
        allocator counters now, the host's memory and utilisation as last sampled (``Utilisation``)."""
        return {**self.device_now(), **self.host_latest()}

    def device_now(self) -> dict[str, float]:
        """The device's memory now (allocator counters, host-side): read on the training thread, at the step."""
        out = device_memory_metrics()
        if self._device_memory is not None:
            out.update(self._device_memory())
        return out

    def host_latest(self) -> Mapping[str, float]:
        """The host's memory and utilisation and the device's utilisation as last sampled: from any thread."""
        return self._utilisation.read()


class IntervalAverager:
    """Running averages over log entries, as the spec defines log_avg_skip_iterations and
    log_avg_reset_interval: the first ``skip_iterations`` log entries of this process are left out
    (with log_interval 1, averages start at iteration skip+1), and the window starts over once it holds
    ``reset_interval`` log entries (entries, not iterations: they differ when log_interval > 1).
    Rates are ratio-of-sums over the window."""

    def __init__(self, skip_iterations: int = 2, reset_interval: int = 10):
        if skip_iterations < 0 or reset_interval < 1:
            raise ValueError(
                f"skip_iterations must be >= 0 and reset_interval >= 1, got {skip_iterations} and {reset_interval}"
            )
        self.skip = skip_iterations
        self.reset_interval = reset_interval
        self._entries = 0  # log entries seen by this process, measured or not
        # entries in the window, and their sums: iterations, seconds, tokens, flops, seconds whose flops are known
        self._window = 0
        self._sums = [0, 0.0, 0.0, 0.0, 0.0]

    def start(self) -> None:
        """A log entry with no measured interval (the first one only starts the clock): it counts
        toward the skipped entries and adds nothing."""
        self._entries += 1

    def add(self, *, iterations: int, seconds: float, tokens: float, flops: float | None = None) -> None:
        """One log entry covering ``iterations`` steps; left out while warm-up entries remain. ``flops`` None: not
        known for this entry, whose time then has no part in the TFLOP/s average either (a 0 would dilute it)."""
        self._entries += 1
        if self._entries <= self.skip:
            return
        if self._window >= self.reset_interval:
            self._window, self._sums = 0, [0, 0.0, 0.0, 0.0, 0.0]
        self._window += 1
        sums = self._sums
        sums[0] += iterations
        sums[1] += seconds
        sums[2] += tokens
        if flops is not None:
            sums[3] += flops
            sums[4] += seconds

    def averages(self, world_size: int) -> dict[str, float]:
        its, secs, tokens, flops, flop_secs = self._sums
        if not its or secs <= 0:
            return {}
        out = {
            "perf/iteration_time_ms_avg": secs / its * 1e3,
            "perf/tokens_per_sec_per_gpu_avg": tokens / secs / world_size,
        }
        if flops and flop_secs > 0:
            out["perf/tflops_per_gpu_avg"] = flops / flop_secs / world_size / 1e12
        return out


class IntervalPerf:
    """The perf figures of the interval between two log steps, timed on the host, for every backend: the interval's
    throughput (``StepPerf.interval``) and the running averages (``IntervalAverager``). The first log step, and one
    not after the last (a restart in the same process), only start the clock: their time includes start-up."""

    def __init__(self, perf: StepPerf, *, world_size: int, skip_iterations: int, reset_interval: int):
        self._perf = perf
        self._averager = IntervalAverager(skip_iterations, reset_interval)
        self._world_size = world_size
        self._last: tuple[int, float] | None = None  # (step, clock) at the previous log step

    def at(
        self, step: int, now: float, amounts: Callable[[int], tuple[float, float | None]]
    ) -> dict[str, float] | None:
        """The figures of the interval that ends at log step ``step`` at clock ``now`` (seconds); None at a step
        that only starts the clock. ``amounts(steps)``: the job's tokens and model FLOPs in the interval of
        ``steps`` steps (asked only when there is one); FLOPs None where not known: no TFLOP/s, and the average's
        TFLOP/s left as it was."""
        previous, self._last = self._last, (step, now)
        if previous is None or step <= previous[0]:
            self._averager.start()
            return None
        steps, seconds = step - previous[0], now - previous[1]
        tokens, flops = amounts(steps)
        self._averager.add(iterations=steps, seconds=seconds, tokens=tokens, flops=flops)
        out = self._perf.interval(tokens=tokens, seconds=seconds, steps=steps, world_size=self._world_size, flops=flops)
        out.update(self._averager.averages(self._world_size))
        return out


@dataclass(frozen=True)
class MemoryReading:
    allocated_bytes: float
    reserved_bytes: float
    peak_allocated_bytes: float


def device_memory(torch_module=None) -> MemoryReading | None:
    """Accelerator memory of the current device from the caching allocator's counters (a host-side
    read: no device synchronisation). None without an accelerator."""
    torch = torch_module or sys.modules.get("torch")
    if torch is None or not _has_cuda(torch):
        return None
    stats = torch.cuda.memory_stats()
    return MemoryReading(
        stats.get("allocated_bytes.all.current", 0),
        stats.get("reserved_bytes.all.current", 0),
        stats.get("allocated_bytes.all.peak", 0),
    )


@functools.lru_cache(maxsize=8)  # per torch module: is_available() asks the driver (~30 us in a training process)
def _has_cuda(torch) -> bool:
    return bool(torch.cuda.is_available())


def host_rss_bytes() -> float:
    # /proc/self/statm's second field, as psutil reads it, from a descriptor kept open: building a psutil Process
    # and opening the file cost 60 µs to milliseconds (a loaded host) of the training thread per logged step
    try:
        return float(int(os.pread(_statm(), 128, 0).split()[1]) * _PAGE_BYTES)
    except OSError:
        import psutil

        return float(psutil.Process(os.getpid()).memory_info().rss)


_STATM: tuple[int, int] | None = None  # (pid, descriptor): a forked child opens its own /proc/self


def _statm() -> int:
    global _STATM
    if _STATM is None or _STATM[0] != os.getpid():
        _STATM = (os.getpid(), os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
    return _STATM[1]


def host_peak_rss_bytes() -> float:
    # the process's peak (Linux gives RUSAGE_THREAD the process's ru_maxrss too) without summing every thread's
    # CPU times as RUSAGE_SELF does, which a trainer's dozens of threads make costly
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    return float(resource.getrusage(who).ru_maxrss) * 1024  # Linux reports KiB


def memory_metrics(torch_module=None) -> dict[str, float]:
    """mem/* in GiB: the device's allocator counters when there is an accelerator, host RSS always."""
    return host_memory_metrics() | device_memory_metrics(torch_module)


def host_memory_metrics() -> dict[str, float]:
    return {"mem/host_rss_gib": host_rss_bytes() / GIB, "mem/host_peak_rss_gib": host_peak_rss_bytes() / GIB}


def device_memory_metrics(torch_module=None) -> dict[str, float]:
    """The device's allocator counters in GiB; empty without an accelerator."""
    dev = device_memory(torch_module)
    if dev is None:
        return {}
    return {
        "mem/allocated_gib": dev.allocated_bytes / GIB,
        "mem/reserved_gib": dev.reserved_bytes / GIB,
        "mem/peak_allocated_gib": dev.peak_allocated_bytes / GIB,
    }


class Utilisation:
    """Device (NVML, or amdsmi on ROCm) and host (psutil) utilisation, and the host's memory (this process's RSS
    and its peak). The device is this process's own:
    ``visible_ordinal`` (JAX's local device), else torch's current device or the local rank's (devices.py),
    found at the first read, on the training thread, when the trainer has picked its device. From then on a
    daemon thread samples every ``interval_s`` and a logged step gets the latest reading: read on the training
    thread they cost ~110 µs per logged step (psutil parses /proc/stat and /proc/meminfo), and the host memory
    ~50 µs more on a VM (two system calls on a cold cache)."""

    def __init__(
        self, visible_ordinal: int | None = None, environ: Mapping[str, str] = os.environ, interval_s: float = 1.0
    ):
        import psutil

        self._psutil = psutil
        psutil.cpu_percent(interval=None)  # first call primes the counter; later calls cover the interval
        self._visible_ordinal = visible_ordinal
        self._environ = environ
        self._interval_s = interval_s
        self._device: tuple[Any, Any] | None = None  # (NVML handle, amdsmi handle), found at the first read
        self._gpu = GpuPower()
        self._latest: dict[str, float] | None = None

    def _handles(self) -> tuple[Any, Any]:
        if self._device is None:
            ordinal = local_ordinal(self._environ) if self._visible_ordinal is None else self._visible_ordinal
            nvml = nvml_handle(ordinal, self._environ)
            self._device = (nvml, None if nvml is not None else amdsmi_handle(ordinal, self._environ))
        return self._device

    def read(self) -> Mapping[str, float]:
        """The latest reading: not to be changed (the sampling thread replaces it whole, never edits it)."""
        latest = self._latest
        if latest is None:  # the first read: finds the device on this (the training) thread, then samples
            latest = self._latest = self.sample()
            sample_every(self._interval_s, self, Utilisation._refresh, "primus-utilisation")
        return latest

    def sampled(self) -> Mapping[str, float]:
        """The latest reading, empty before the first ``read``: starts no sampling."""
        return self._latest or {}

    def _refresh(self) -> None:
        self._latest = self.sample()

    def sample(self) -> dict[str, float]:
        out = {
            "sys/cpu_util_pct": self._psutil.cpu_percent(interval=None),
            "sys/host_mem_used_pct": self._psutil.virtual_memory().percent,
            **host_memory_metrics(),
        }
        gpu = self._gpu_util()
        if gpu is not None:
            out["sys/gpu_util_pct"] = gpu
        out.update(self._gpu.sample(*self._handles()))
        return out

    def _gpu_util(self) -> float | None:
        nvml, amd = self._handles()
        try:
            if nvml is not None:
                import pynvml

                return float(pynvml.nvmlDeviceGetUtilizationRates(nvml).gpu)
            if amd is not None:
                import amdsmi

                return float(amdsmi.amdsmi_get_gpu_activity(amd)["gfx_activity"])
        except Exception:  # a driver hiccup must not break logging; the metric is just absent this step
            return None
        return None
