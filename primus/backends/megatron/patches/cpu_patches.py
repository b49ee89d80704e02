"""Declares the Megatron CPU platform: every patch that lets unmodified megatron-core train on a host
without an accelerator (1 process or torchrun with gloo; DP, TP and PP). Listed in
``primus/patches/catalog.py``; importing this module registers the patches."""

from __future__ import annotations

from primus.backends.megatron.patches import (
    cpu_device_placement,
    cpu_initialize,
    cpu_jit,
    cpu_rng,
    cpu_torch_shims,
)
from primus.patches import REGISTRY, Patch

CPU_PATCHES: tuple[Patch, ...] = (
    *cpu_torch_shims.PATCHES,
    *cpu_device_placement.PATCHES,
    *cpu_jit.PATCHES,
    *cpu_rng.PATCHES,
    *cpu_initialize.PATCHES,
)

for _patch in CPU_PATCHES:
    REGISTRY.register(_patch)
