"""Declares the TorchTitan CPU platform: the patches that let unmodified torchtitan train on a host
without an accelerator (1 process, or torchrun with FSDP/DDP/TP on gloo). Listed in
``primus/patches/catalog.py``; importing this module registers them."""

from __future__ import annotations

from primus.backends.torchtitan.patches import cpu_device, cpu_fsdp, cpu_profiler
from primus.patches import REGISTRY, Patch

CPU_PATCHES: tuple[Patch, ...] = (*cpu_device.PATCHES, *cpu_fsdp.PATCHES, *cpu_profiler.PATCHES)

for _patch in CPU_PATCHES:
    REGISTRY.register(_patch)
