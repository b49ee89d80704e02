"""Upload of this run's own files (``<run_dir>/logs``, ``<run_dir>/traces``) to its MLflow run, by
the MLflow sink after the last metric was delivered. Only files that really live under the run
directory go: a symlink pointing elsewhere is skipped, so another run's or the user's files never leak."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger("primus.tracking")


def run_files(run_dir: Path, subdirs: Iterable[str]) -> list[Path]:
    root = run_dir.resolve()
    files = []
    for sub in subdirs:
        for path in sorted((run_dir / sub).rglob("*")):
            if not path.is_file():
                continue
            if not path.resolve().is_relative_to(root):
                log.warning("primus tracking: not uploading %s: it points outside the run directory %s", path, root)
                continue
            files.append(path)
    return files


def upload_run_files(client: Any, run_id: str, run_dir: Path, subdirs: Iterable[str]) -> int:
    """Upload with the MlflowClient ``client``; returns the number of files sent."""
    files = run_files(run_dir, subdirs)
    for path in files:
        client.log_artifact(run_id, str(path), artifact_path=path.parent.relative_to(run_dir).as_posix())
    return len(files)
