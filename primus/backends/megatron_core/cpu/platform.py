"""What every Megatron CPU-platform patch shares: the upstream (``primus.upstreams.megatron.MEGATRON``; the CPU
platform was verified end to end on 0.19.2, 1 process, DP=2, TP=2, PP=2) and the condition that turns
it on (no accelerator, or PRIMUS_PLATFORM=cpu)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from primus.patches import Patch, PatchContext, PatchHandle
from primus.upstreams.megatron import MEGATRON
from primus.upstreams.release import Upstream


def on_cpu(context: PatchContext) -> bool:
    """on CPU (no accelerator, or PRIMUS_PLATFORM=cpu)"""
    return context.platform() == "cpu"


def cpu_patch(
    id: str,
    target: str,
    description: str,
    install: Callable[[Any, PatchHandle], None],
    *,
    upstream: Upstream = MEGATRON,
    backend: str = "megatron",
) -> Patch:
    """A CPU-platform patch on ``target`` (the upstream module whose import installs it): Megatron's, or, with
    ``upstream`` and ``backend``, one of a trainer built on megatron-core that has its own copy of the target."""
    return Patch(
        id=id,
        target=target,
        upstream=upstream,
        versions="",
        install=install,
        backend=backend,
        condition=on_cpu,
        description=description,
    )
