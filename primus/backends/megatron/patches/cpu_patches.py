"""Declares the Megatron CPU platform: every patch that lets unmodified megatron-core train on a host
without an accelerator (1 process or torchrun with gloo; DP, TP and PP), declared in ``primus/backends/megatron_core/cpu/``
by what they patch. An entry point of the group ``primus.patches`` (``setup.cfg``); importing this module
registers the patches."""

from __future__ import annotations

from primus.backends.megatron_core.cpu import device_placement, initialize, jit, rng, torch_shims
from primus.patches import REGISTRY, Patch

CPU_PATCHES: tuple[Patch, ...] = (
    *torch_shims.PATCHES,
    *device_placement.PATCHES,
    *jit.PATCHES,
    *rng.PATCHES,
    *initialize.PATCHES,
)

for _patch in CPU_PATCHES:
    REGISTRY.register(_patch)
