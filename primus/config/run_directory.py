"""Where a run keeps its journal, run ids and tracker folders: the rule `primus train` and the backends
share, so a job finds the same directory whichever way it is launched.

An explicit run directory wins: the one `primus train` chose for every rank (PRIMUS_RUN_DIR), or a backend's own
argument for it (Megatron's ``--primus-run-dir``); every backend reads it with ``given_run_dir``. A job that checkpoints keeps it in its checkpoint folder,
``<checkpoint_dir>/primus``: relaunched from its checkpoint (`primus train` again, or the upstream command),
it finds its run ids there and resumes the same MLflow and W&B runs. Anything else is a new run in a fresh
folder."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from primus.config.environment import RUN_DIR_ENV

CHECKPOINTED_RUN_DIR = "primus"  # the run directory's name inside a checkpoint folder


def timestamp(now: float | None = None) -> str:
    """A fresh run directory's name: the launch time, to the second."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


def given_run_dir(argument: str | Path | None = None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The run directory the job was given: the backend's own argument for it, else PRIMUS_RUN_DIR."""
    value = argument or environ.get(RUN_DIR_ENV)
    return Path(value) if value else None


def choose_run_dir(*, explicit: str | Path | None, checkpoint_dir: str | Path | None, fresh: Path) -> Path:
    if explicit:
        return Path(explicit)
    if checkpoint_dir:
        return Path(checkpoint_dir) / CHECKPOINTED_RUN_DIR
    return fresh
