"""Where a run keeps its journal, run ids and tracker folders: the rule `primus train` and the backends
share, so a job finds the same directory whichever way it is launched.

An explicit run directory wins. A job that checkpoints keeps it in its checkpoint folder,
``<checkpoint_dir>/primus``: relaunched from its checkpoint (`primus train` again, or the upstream command),
it finds its run ids there and resumes the same MLflow and W&B runs. Anything else is a new run in a fresh
folder."""

from __future__ import annotations

import time
from pathlib import Path

CHECKPOINTED_RUN_DIR = "primus"  # the run directory's name inside a checkpoint folder


def timestamp(now: float | None = None) -> str:
    """A fresh run directory's name: the launch time, to the second."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


def choose_run_dir(*, explicit: str | Path | None, checkpoint_dir: str | Path | None, fresh: Path) -> Path:
    if explicit:
        return Path(explicit)
    if checkpoint_dir:
        return Path(checkpoint_dir) / CHECKPOINTED_RUN_DIR
    return fresh
