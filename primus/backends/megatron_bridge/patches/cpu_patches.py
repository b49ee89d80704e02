"""Declares the Megatron-Bridge CPU platform (``primus/backends/megatron_bridge/cpu.py``). An entry point of the group
``primus.patches`` (``setup.cfg``); importing this module registers the patches."""

from __future__ import annotations

from primus.backends.megatron_bridge.cpu import PATCHES
from primus.patches import REGISTRY

for _patch in PATCHES:
    REGISTRY.register(_patch)
