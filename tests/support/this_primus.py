"""Runs on another environment's interpreter (.venv-maxtext, .venv-bridge) import this checkout's ``primus``: such
an environment may hold another checkout's (an editable install, whose finder Python consults after PYTHONPATH),
so a run gets a folder first on PYTHONPATH holding only this ``primus`` and the metadata this test process's
environment installed it with (links): its entry points name this checkout's patch modules, and the first
distribution of a name on the path is the one ``importlib.metadata`` reads. The repository root itself would shadow
modules by its other folders' names (benchmarks, scripts, tests)."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "primus"


def this_primus_folder(parent: Path) -> Path:
    """Make, under ``parent``, the folder holding only this checkout's ``primus`` and its distribution's metadata."""
    # the installed distribution's .dist-info; not the primus_tracking.egg-info an editable install leaves in the
    # checkout, which importlib.metadata finds first when the checkout is on sys.path; the first on the path (an
    # overlay environment sees another environment's beneath its own)
    info = next(iter(dict.fromkeys(dist.locate_file(f.parts[0])
                                   for dist in importlib.metadata.distributions(name="primus-tracking")
                                   for f in dist.files or () if f.parts[0].endswith(".dist-info"))))
    folder = parent / "this-primus"
    folder.mkdir()
    (folder / "primus").symlink_to(PACKAGE, target_is_directory=True)
    (folder / Path(info).name).symlink_to(Path(info), target_is_directory=True)
    return folder


def with_this_primus(folder: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``folder`` first on its PYTHONPATH (its own entries kept after it)."""
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)}
