"""``torch.cuda`` stand-ins that let Megatron run where no CUDA device exists.

They target ``megatron.core`` because they exist for Megatron's sake: installed when it is first
imported, before any of its code runs. Each one replaces a ``torch.cuda`` function that raises (or is
silently dropped) without a device by what it means on a CPU host.
"""

from __future__ import annotations

import os
import resource
import sys
from collections import defaultdict
from types import ModuleType, SimpleNamespace
from typing import Any

from primus.backends.megatron_core.cpu.platform import cpu_patch
from primus.patches import PatchHandle


class CpuStream:
    """Stands in for ``torch.cuda.Stream``: on CPU every operation is already synchronous."""

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        return event

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


_CURRENT_STREAM = CpuStream()


def install_cuda_runtime_shims(megatron_core: ModuleType, handle: PatchHandle) -> None:
    import torch

    cuda = torch.cuda
    # The device index only ever reaches torch through the device-placement patch, which maps it to cpu.
    handle.replace(cuda, "current_device", lambda: 0)
    handle.replace(cuda, "synchronize", lambda device=None: None)
    handle.replace(cuda, "current_stream", lambda device=None: _CURRENT_STREAM)
    handle.replace(cuda, "Stream", CpuStream)

    # Dropout on CPU draws from the CPU generator, so that is the state Megatron must save and seed.
    def get_rng_state(device: Any = "cuda") -> Any:
        return torch.get_rng_state()

    def manual_seed(seed: int) -> None:
        # The CPU generator only: torch.manual_seed would also queue seeds for the absent CUDA devices.
        torch.default_generator.manual_seed(int(seed))

    for owner in (cuda, cuda.random):  # tensor_parallel/random.py reaches both paths
        handle.replace(owner, "get_rng_state", get_rng_state)
        handle.replace(owner, "manual_seed", manual_seed)


def install_device_properties(megatron_core: ModuleType, handle: PatchHandle) -> None:
    import torch

    properties = SimpleNamespace(
        name="cpu",
        major=0,
        minor=0,
        multi_processor_count=os.cpu_count() or 1,
        total_memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
    )
    handle.replace(torch.cuda, "get_device_properties", lambda device=None: properties)
    handle.replace(torch.cuda, "get_device_capability", lambda device=None: (0, 0))
    # Architecture 0 (< 10) makes validate_args demand CUDA_DEVICE_MAX_CONNECTIONS=1 for TP/CP > 1
    # (arguments.py:1437); CPU has no CUDA streams, so the value is meaningless here.
    if "CUDA_DEVICE_MAX_CONNECTIONS" not in os.environ:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        handle.on_undo(lambda: os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None))


def host_memory_stats(device: Any = None) -> defaultdict[str, int]:
    """``torch.cuda.memory_stats`` for the host: this process's resident memory now and at its peak."""
    import psutil

    rss = psutil.Process().memory_info().rss
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    stats: defaultdict[str, int] = defaultdict(int)  # allocation counts have no host equivalent: 0
    stats.update(
        {
            "allocated_bytes.all.current": rss,
            "reserved_bytes.all.current": rss,
            "allocated_bytes.all.peak": peak,
            "reserved_bytes.all.peak": peak,
        }
    )
    return stats


def install_host_memory_stats(megatron_core: ModuleType, handle: PatchHandle) -> None:
    import psutil  # noqa: F401  (fail at install, not in the training loop, when it is missing)
    import torch

    handle.replace(torch.cuda, "memory_stats", host_memory_stats)


PATCHES = (
    cpu_patch(
        "megatron.cpu.cuda_runtime_shims",
        "megatron.core",
        "torch.cuda.current_device/synchronize/current_stream/Stream/get_rng_state/manual_seed work "
        "on CPU (core/timers.py:152,303, training.py:1876, tensor_parallel/random.py:303-305)",
        install_cuda_runtime_shims,
    ),
    cpu_patch(
        "megatron.cpu.device_properties",
        "megatron.core",
        "torch.cuda.get_device_properties/capability report architecture 0 for TP/CP > 1 "
        "(arguments.py:1414 -> utils/common_utils.py:504)",
        install_device_properties,
    ),
    cpu_patch(
        "megatron.cpu.host_memory_stats",
        "megatron.core",
        "torch.cuda.memory_stats reports host RSS so --log-memory-to-tensorboard logs real mem-* "
        "values (training.py:2742)",
        install_host_memory_stats,
    ),
)
