"""What torchtitan calls on ``device_module`` (normally ``torch.cuda``), answered for the host: memory
figures are this process's resident memory, so the ``memory/*`` metrics stay meaningful on CPU."""

from __future__ import annotations

import os
import types
from typing import Any

import torch

_PEAK_FIELDS = ("active_bytes.all.peak", "reserved_bytes.all.peak")


def _proc_field(path: str, name: str) -> str | None:
    """The value of the first ``name: value`` line of a /proc file; None when there is none."""
    try:
        with open(path) as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith(name)), None)
    except OSError:
        return None


def _host_name() -> str:
    model = _proc_field("/proc/cpuinfo", "model name")
    return f"CPU {model}" if model else "CPU"


def _peak_rss_bytes() -> int:
    """VmHWM: the resident-set high-water mark, which ``reset_peak_memory_stats`` can lower."""
    peak = _proc_field("/proc/self/status", "VmHWM:")
    return int(peak.split()[0]) * 1024 if peak else -1  # -1: upstream's own value for "unknown"


class CpuDeviceModule(types.ModuleType):
    """``torch.cpu`` plus the ``torch.cuda``-style calls torchtitan makes (metrics.py DeviceMemoryMonitor,
    trainer.py set_device/empty_cache, distributed/utils.py barrier(device_ids=[current_device()]))."""

    def __init__(self) -> None:
        super().__init__("primus_cpu_device_module")
        self._properties = types.SimpleNamespace(
            name=_host_name(), total_memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    def current_device(self) -> int:
        return 0  # torch.cpu answers "cpu", which gloo's barrier(device_ids=[...]) rejects

    def get_device_name(self, device: Any = None) -> str:
        return self._properties.name

    def get_device_properties(self, device: Any = None) -> types.SimpleNamespace:
        return self._properties

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        peak = _peak_rss_bytes()
        return {**dict.fromkeys(_PEAK_FIELDS, peak), "num_alloc_retries": 0, "num_ooms": 0}

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        try:  # "5" resets VmHWM to the current RSS (Linux >= 4.0)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass

    def empty_cache(self) -> None:
        pass
