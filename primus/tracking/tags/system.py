"""Tags every run gets: the git commit of the working directory, the versions of the libraries installed,
where and how it was launched (``launch.py``), the accelerators it sees (``accelerator.py``),
the Primus patches applied in this process (``primus.patches.REGISTRY``), and for each upstream those
patches applied to, its version and where its code was imported from, as the patches found them (a source
checkout's own version, not that of a wheel installed beneath it), and ``primus.upstream.untested`` when that
release is outside the supported range and was tried (PRIMUS_UPSTREAM_CHECK=warn)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

from primus import DISTRIBUTION
from primus.tracking.tags.accelerator import accelerator_tags
from primus.tracking.tags.launch import launch_tags

INSTALLED_DISTRIBUTIONS = (DISTRIBUTION, "torch", "mlflow", "wandb", "tensorboard")


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def system_tags() -> dict[str, str]:
    from primus.patches import REGISTRY

    tags = {**launch_tags(os.environ, sys.orig_argv), **accelerator_tags()}
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    for dist in INSTALLED_DISTRIBUTIONS:
        try:
            tags[f"primus.version.{dist}"] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    applied = REGISTRY.applied()
    for record in applied:
        if record.distribution and record.version:
            tags[f"primus.version.{record.distribution}"] = record.version
            tags[f"primus.source.{record.distribution}"] = record.where
    tags["primus.patches"] = ",".join(f"{r.id}@{r.version}" if r.version else r.id for r in applied) or "none"
    untested = sorted({f"{r.distribution} {r.version}" for r in applied if r.untested})
    if untested:  # a release outside the supported range, tried with PRIMUS_UPSTREAM_CHECK=warn
        tags["primus.upstream.untested"] = ", ".join(untested)
    return tags
