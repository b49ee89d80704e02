"""What every Megatron CPU-platform patch shares: the upstream range it was verified on and the
condition that turns it on (no accelerator, or PRIMUS_PLATFORM=cpu)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from primus.patches import Patch, PatchContext, PatchHandle

# Verified end to end (1 process, DP=2, TP=2, PP=2) on this release only.
MEGATRON_CORE_VERSIONS = ">=0.19.2,<0.20"


def on_cpu(context: PatchContext) -> bool:
    return context.platform() == "cpu"


def cpu_patch(id: str, target: str, description: str, install: Callable[[Any, PatchHandle], None]) -> Patch:
    """A Megatron CPU-platform patch on ``target`` (the upstream module whose import installs it)."""
    return Patch(id=id, target=target, distribution="megatron-core", versions=MEGATRON_CORE_VERSIONS,
                 install=install, backend="megatron", condition=on_cpu, description=description)
