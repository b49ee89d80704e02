"""Upload of this run's own files (``<run_dir>/logs``, ``<run_dir>/traces``) to its MLflow run, by
the MLflow sink after the last metric was delivered, and of a checkpoint's files when asked (``upload_checkpoints``). Only files that really live under the run
directory go: a symlink pointing elsewhere is skipped, so another run's or the user's files never leak.
When the tracking server stores the run's artifacts itself (``mlflow-artifacts:``), the light REST client PUTs
them there; any other artifact store (s3://, gs://, a path, ...) needs MLflow's own artifact repositories, so
the full client is imported then, for the upload only."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from primus.tracking.trackers.mlflow_full import FullMlflowClient
from primus.tracking.trackers.mlflow_rest import MlflowRestClient

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


def upload_run_files(
    client: MlflowRestClient | FullMlflowClient, run_id: str, run_dir: Path, subdirs: Iterable[str]
) -> int:
    """Upload to the run ``run_id`` of the MLflow sink's ``client``; returns the number of files sent."""
    files = run_files(run_dir, subdirs)
    if files:
        upload = uploader(client, run_id)
        for path in files:
            upload(path, path.parent.relative_to(run_dir).as_posix())
    return len(files)


def uploader(client: MlflowRestClient | FullMlflowClient, run_id: str) -> Callable[[Path, str], None]:
    """``upload(local_path, artifact_path)`` for the run's artifact store."""
    if isinstance(client, MlflowRestClient):
        artifact_uri = client.artifact_uri(run_id)
        if client.proxies_artifacts(artifact_uri):
            return partial(client.upload_artifact, artifact_uri)
        client = FullMlflowClient(client.tracking_uri, None, client.timeout_s)
    return partial(client.log_artifact, run_id)


def upload_checkpoint(upload: Callable[[Path, str], None], checkpoint: Path, artifact_path: str) -> int:
    """Every file of a local checkpoint (a folder or one file) under ``artifact_path``; returns how many (0: it is
    not on this machine, or no longer)."""
    if not checkpoint.exists():
        return 0
    files = sorted(p for p in checkpoint.rglob("*") if p.is_file()) if checkpoint.is_dir() else [checkpoint]
    for path in files:
        relative = path.parent.relative_to(checkpoint).as_posix() if checkpoint.is_dir() else "."
        upload(path, artifact_path if relative == "." else f"{artifact_path}/{relative}")
    return len(files)
