"""Patch registry (layer 2). See ``registry.py``; backends declare their patches in
``primus/backends/<name>/patches/`` and list the declaring modules in ``catalog.py``."""

from primus.patches.registry import (
    REGISTRY,
    DuplicatePatchError,
    Patch,
    PatchContext,
    PatchError,
    PatchHandle,
    PatchRecord,
    PatchRegistry,
)

__all__ = ["REGISTRY", "DuplicatePatchError", "Patch", "PatchContext", "PatchError", "PatchHandle",
           "PatchRecord", "PatchRegistry"]
