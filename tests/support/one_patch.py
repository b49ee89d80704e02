"""Install one registered patch on a stand-in module, as the registry would, and take it off again: for unit tests
of what a patch binds and records, without upstream."""

from __future__ import annotations

from contextlib import contextmanager

from primus.patches import REGISTRY, PatchContext
from primus.patches.catalog import load_all
from primus.patches.handle import PatchHandle


@contextmanager
def installed(patch_id: str, module):
    """``patch_id`` installed on ``module`` for the block; a failing install raises."""
    load_all()
    [patch] = [p for p in REGISTRY.patches() if p.id == patch_id]
    handle = PatchHandle(patch, PatchContext(), lambda handle, error: None)
    try:
        patch.install(module, handle)
        yield module
    finally:
        handle.undo()
