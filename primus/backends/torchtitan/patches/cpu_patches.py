"""The TorchTitan CPU platform: the patches that let unmodified torchtitan train on a host without an accelerator (1
process, or torchrun with FSDP/DDP/TP on gloo), declared in ``../cpu/`` by what they patch."""

from __future__ import annotations

from primus.backends.torchtitan.cpu import device, fsdp, profiler
from primus.patches import REGISTRY, Patch

CPU_PATCHES: tuple[Patch, ...] = (*device.PATCHES, *fsdp.PATCHES, *profiler.PATCHES)

for _patch in CPU_PATCHES:
    REGISTRY.register(_patch)
