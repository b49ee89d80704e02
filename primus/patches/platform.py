"""Patches that make an upstream trainer run on a host without an accelerator: each backend's CPU module makes its
patches with the constructor ``cpu_patches`` gives it, all turned on by one condition (``on_cpu``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from primus.patches.handle import PatchHandle
from primus.patches.registry import Patch, PatchContext
from primus.upstreams.release import Upstream


def on_cpu(context: PatchContext) -> bool:
    """on CPU (no accelerator, or PRIMUS_PLATFORM=cpu)"""
    return context.platform() == "cpu"


class CpuPatch(Protocol):
    def __call__(
        self, id: str, target: str, description: str, install: Callable[[Any, PatchHandle], None], versions: str = ""
    ) -> Patch: ...


def cpu_patches(upstream: Upstream, backend: str) -> CpuPatch:
    """The constructor of ``backend``'s CPU-platform patches on ``upstream``'s modules (``target``: the module whose
    import installs the patch)."""

    def cpu_patch(
        id: str, target: str, description: str, install: Callable[[Any, PatchHandle], None], versions: str = ""
    ) -> Patch:
        return Patch(
            id=id,
            target=target,
            upstream=upstream,
            versions=versions,
            install=install,
            backend=backend,
            condition=on_cpu,
            description=description,
        )

    return cpu_patch
