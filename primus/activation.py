"""Turn Primus's patches on in this process: load the patch declarations, then install the
post-import hooks. Called by the bootstrap ``sitecustomize`` (``primus-run``), by the drop-in
``pretrain_gpt.py`` and by tests. Cheap: imports no upstream module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from primus.patches import REGISTRY, PatchContext
from primus.patches.catalog import load_all


def activate(config: Mapping[str, Any] | None = None, only: Iterable[str] | None = None) -> None:
    load_all()
    REGISTRY.activate(PatchContext(config=dict(config or {})), only=only)
