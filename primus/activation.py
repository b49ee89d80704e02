"""Turn Primus's patches on in this process: load the patch declarations, then install the
post-import hooks. Called by the bootstrap ``sitecustomize`` (``primus-run``), by the drop-in
``pretrain_gpt.py`` and by tests. Cheap: imports no upstream module.

``activation_env`` is the contract for child processes: with it, any Python started from the
environment (torchrun workers, subprocesses) runs the bootstrap and activates the patches."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from primus.patches import REGISTRY, PatchContext
from primus.patches.catalog import load_all

ACTIVATE_ENV = "PRIMUS_ACTIVATE"  # "1": the bootstrap sitecustomize activates the patches
CONFIG_ENV = "PRIMUS_CONFIG"  # path of the experiment YAML, passed through to the command
BOOTSTRAP_DIR = Path(__file__).resolve().parent / "bootstrap"


def activate(config: Mapping[str, Any] | None = None, only: Iterable[str] | None = None) -> None:
    load_all()
    REGISTRY.activate(PatchContext(config=dict(config or {})), only=only)


def activation_env(base: Mapping[str, str], config: str | None = None) -> dict[str, str]:
    """``base`` plus what makes every Python process started with it activate the patches: the
    bootstrap directory first on PYTHONPATH (once), PRIMUS_ACTIVATE=1, PRIMUS_CONFIG when given."""
    env = dict(base)
    existing = env.get("PYTHONPATH", "")
    # Empty entries stay (they mean the working directory); an unset PYTHONPATH adds none.
    kept = [p for p in existing.split(os.pathsep) if not (p and Path(p).resolve() == BOOTSTRAP_DIR)] if existing else []
    env["PYTHONPATH"] = os.pathsep.join([str(BOOTSTRAP_DIR), *kept])
    env[ACTIVATE_ENV] = "1"
    if config is not None:
        env[CONFIG_ENV] = str(Path(config).resolve())
    return env
