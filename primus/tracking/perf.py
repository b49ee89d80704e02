"""Performance metrics computed from structured values (never from printed text).

Everything here works on numbers the backend already has at a log step — tokens in the interval,
the interval's wall time, the model FLOPs per step — so no device synchronisation is added on
non-log steps. Averages of rates are ratio-of-sums over a window (the harmonic mean of the
per-step rates weighted by time), never arithmetic means of rates.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

GIB = float(1 << 30)
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# Dense (no sparsity) peak TFLOP/s per device, by dtype, from vendors' datasheets. A device or dtype
# missing here has no MFU: "unknown" is omitted, never guessed (an A100 fallback gave users 500 % MFU).
# Keys are matched as case-insensitive substrings of the device name, most specific first.
PEAK_TFLOPS: tuple[tuple[str, Mapping[str, float]], ...] = (
    ("GB200", {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "tf32": 1250.0}),
    ("B200", {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0}),
    ("H200", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("H100 PCIe", {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.2}),
    ("H100", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("H800", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("A800", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("L40S", {"bf16": 362.0, "fp16": 362.0, "fp8": 733.0, "tf32": 183.0, "fp32": 91.6}),
    ("A10G", {"bf16": 70.0, "fp16": 70.0, "tf32": 35.0, "fp32": 31.2}),
    ("V100", {"fp16": 125.0, "fp32": 15.7}),
    ("MI355X", {"bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.2, "fp32": 157.3}),
    ("MI325X", {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}),
    ("MI300X", {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}),
    ("MI250X", {"bf16": 383.0, "fp16": 383.0, "fp32": 95.7}),
)

_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
                  "float8": "fp8", "e4m3": "fp8", "hybrid": "fp8"}


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


def throughput_metrics(*, tokens: float, seconds: float, world_size: int, flops: float | None = None,
                       device_name: str | None = None, dtype: str = "bf16") -> dict[str, float]:
    """tokens/s (total and per device), TFLOP/s per device and MFU for one interval.

    ``tokens`` and ``flops`` cover the whole job (all devices) over ``seconds`` of wall time.
    MFU is present only when the device's peak for ``dtype`` is known."""
    if seconds <= 0 or world_size <= 0:
        return {}
    out = {
        "perf/tokens_per_sec": tokens / seconds,
        "perf/tokens_per_sec_per_gpu": tokens / seconds / world_size,
    }
    if flops is not None:
        tflops = flops / seconds / world_size / 1e12
        out["perf/tflops_per_gpu"] = tflops
        peak = peak_tflops(device_name, dtype)
        if peak:
            out["perf/mfu"] = tflops / peak
    return out


class IntervalAverager:
    """Windowed averages that skip warm-up and reset periodically (log_avg_skip_iterations,
    log_avg_reset_interval). Rates are ratio-of-sums over the window."""

    def __init__(self, skip_iterations: int = 2, reset_interval: int = 10):
        if skip_iterations < 0 or reset_interval < 1:
            raise ValueError(f"skip_iterations must be >= 0 and reset_interval >= 1, got "
                             f"{skip_iterations} and {reset_interval}")
        self.skip = skip_iterations
        self.reset_interval = reset_interval
        self._seen = 0
        self._window: deque[tuple[int, float, float, float]] = deque()  # (iterations, seconds, tokens, flops)

    def add(self, *, iterations: int, seconds: float, tokens: float, flops: float = 0.0) -> None:
        """One log interval covering ``iterations`` steps; intervals that end inside warm-up are skipped."""
        self._seen += iterations
        if self._seen <= self.skip:
            return
        if sum(i for i, *_ in self._window) >= self.reset_interval:
            self._window.clear()
        self._window.append((iterations, seconds, tokens, flops))

    def averages(self, world_size: int) -> dict[str, float]:
        its = sum(w[0] for w in self._window)
        secs = sum(w[1] for w in self._window)
        if not its or secs <= 0:
            return {}
        out = {
            "perf/iteration_time_ms_avg": secs / its * 1e3,
            "perf/tokens_per_sec_per_gpu_avg": sum(w[2] for w in self._window) / secs / world_size,
        }
        flops = sum(w[3] for w in self._window)
        if flops:
            out["perf/tflops_per_gpu_avg"] = flops / secs / world_size / 1e12
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
    if torch is None or not torch.cuda.is_available():
        return None
    stats = torch.cuda.memory_stats()
    return MemoryReading(stats.get("allocated_bytes.all.current", 0), stats.get("reserved_bytes.all.current", 0),
                         stats.get("allocated_bytes.all.peak", 0))


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
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux reports KiB


def memory_metrics(torch_module=None) -> dict[str, float]:
    """mem/* in GiB: the device's allocator counters when there is an accelerator, host RSS always."""
    out = {"mem/host_rss_gib": host_rss_bytes() / GIB, "mem/host_peak_rss_gib": host_peak_rss_bytes() / GIB}
    dev = device_memory(torch_module)
    if dev is not None:
        out.update({"mem/allocated_gib": dev.allocated_bytes / GIB, "mem/reserved_gib": dev.reserved_bytes / GIB,
                    "mem/peak_allocated_gib": dev.peak_allocated_bytes / GIB})
    return out


class Utilisation:
    """Device (NVML, or amdsmi on ROCm) and host (psutil) utilisation. A daemon thread reads them every
    ``interval_s``; a logged step gets the latest reading. Read on the training thread they cost ~110 µs per
    logged step (psutil parses /proc/stat and /proc/meminfo), twice the training thread's whole budget."""

    def __init__(self, device_index: int = 0, interval_s: float = 1.0):
        import psutil

        self._psutil = psutil
        psutil.cpu_percent(interval=None)  # first call primes the counter; later calls cover the interval
        self._device_index = device_index
        self._nvml_handle = _nvml_handle(device_index)
        self._amd_handle = None if self._nvml_handle is not None else _amdsmi_handle(device_index)
        self._latest: dict[str, float] | None = None
        threading.Thread(target=_sample_while_alive, args=(weakref.ref(self), interval_s),
                         name="primus-utilisation", daemon=True).start()

    def read(self) -> dict[str, float]:
        latest = self._latest
        if latest is None:  # the first logged step came before the first sample
            latest = self._latest = self.sample()
        return dict(latest)

    def sample(self) -> dict[str, float]:
        out = {"sys/cpu_util_pct": self._psutil.cpu_percent(interval=None),
               "sys/host_mem_used_pct": self._psutil.virtual_memory().percent}
        gpu = self._gpu_util()
        if gpu is not None:
            out["sys/gpu_util_pct"] = gpu
        return out

    def _gpu_util(self) -> float | None:
        try:
            if self._nvml_handle is not None:
                import pynvml

                return float(pynvml.nvmlDeviceGetUtilizationRates(self._nvml_handle).gpu)
            if self._amd_handle is not None:
                import amdsmi

                return float(amdsmi.amdsmi_get_gpu_activity(self._amd_handle)["gfx_activity"])
        except Exception:  # a driver hiccup must not break logging; the metric is just absent this step
            return None
        return None


def _sample_while_alive(ref: weakref.ref[Utilisation], interval_s: float) -> None:
    """The sampling thread: ends when its Utilisation is gone (it holds only a weak reference)."""
    while True:
        time.sleep(interval_s)
        utilisation = ref()
        if utilisation is None:
            return
        try:
            utilisation._latest = utilisation.sample()
        except Exception:  # noqa: BLE001 - a failed read keeps the previous one; logging is never broken
            pass
        del utilisation


def _nvml_handle(index: int):
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # no NVML library or no NVIDIA device: not an error
        return None


def _amdsmi_handle(index: int):
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        return amdsmi.amdsmi_get_processor_handles()[index]
    except Exception:  # no ROCm SMI library or no AMD device
        return None
