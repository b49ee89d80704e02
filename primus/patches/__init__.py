"""Patch registry (layer 2). See ``registry.py`` (declare, select, install, undo) and ``handle.py`` (what
an install changes upstream through); backends declare their patches in
``primus/backends/<name>/patches/`` and register the declaring modules as entry points (``catalog.py``)."""

from primus.patches.handle import PatchHandle
from primus.patches.registry import (
    REGISTRY,
    DuplicatePatchError,
    Patch,
    PatchContext,
    PatchError,
    PatchRecord,
    PatchRegistry,
)

__all__ = [
    "REGISTRY",
    "DuplicatePatchError",
    "Patch",
    "PatchContext",
    "PatchError",
    "PatchHandle",
    "PatchRecord",
    "PatchRegistry",
]
