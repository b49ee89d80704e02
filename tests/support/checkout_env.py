"""The environment that makes another interpreter (MaxText's .venv-maxtext, Bridge's .venv-bridge) run this
checkout's primus: the repository root on PYTHONPATH, with this interpreter's primus distribution metadata beside it
(its entry points name the patch modules; those of the copy installed there may name modules this checkout lacks,
or lack ones it has)."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

from primus import DISTRIBUTION

REPO = Path(__file__).resolve().parents[2]


def checkout_env(folder: Path, pythonpath: str = "") -> dict[str, str]:
    """``folder``: an empty folder of the test's, where the metadata is linked."""
    metadata = Path(str(importlib.metadata.distribution(DISTRIBUTION)._path))  # type: ignore[attr-defined]
    (folder / metadata.name).symlink_to(metadata, target_is_directory=True)
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO), str(folder), pythonpath) if p)}
