"""What every TorchTitan CPU-platform patch shares: the upstream and the condition that turns it on (no
accelerator, or PRIMUS_PLATFORM=cpu)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from primus.patches import Patch, PatchContext, PatchHandle
from primus.upstreams.torchtitan import TORCHTITAN


def on_cpu(context: PatchContext) -> bool:
    """on CPU (no accelerator, or PRIMUS_PLATFORM=cpu)"""
    return context.platform() == "cpu"


def cpu_patch(
    id: str, target: str, description: str, install: Callable[[Any, PatchHandle], None], versions: str = ""
) -> Patch:
    return Patch(
        id=id,
        target=target,
        upstream=TORCHTITAN,
        versions=versions,
        install=install,
        backend="torchtitan",
        condition=on_cpu,
        description=description,
    )
