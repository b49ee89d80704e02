"""Every file and folder of a run directory, by name (``run.json``, ``meta.json``, ``journal/``, ``cursors/``, the
locks, ``logs/``, ``traces/``, ``checkpoints/``, ``stacks/``...), and the node's private folder, where the delivery
sockets and the ranks' stacks FIFOs live. docs/tracking-internals.md#a-run-directorys-files says which module
writes each.
"""

import os
import tempfile
from pathlib import Path

STATE_FILE = "run.json"
META_FILE = "meta.json"
JOURNAL_DIR = "journal"
LEGACY_JOURNAL = "journal.jsonl"
CURSORS_DIR = "cursors"
LOCK_FILE = ".lock"
DELIVERY_LOCK = ".delivery.lock"
LOGS_DIR = "logs"
TRACES_DIR = "traces"
REPORTS_DIR = "reports"
CHECKPOINTS_DIR = "checkpoints"
STACKS_DIR = "stacks"
STRUCTURED_LOGS_DIR = "structured_logs"  # TorchTitan's own name for the folder, under its output folder
TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"
# present while the latest attempt is one a crash loop stopped (goodput/attempts.py): what a requeue asks, in shell
NO_PROGRESS_FILE = "stopped-no-progress"


def rank_log_file(run_dir: Path, rank: int) -> Path:
    """Where a rank's console is copied for upload."""
    return run_dir / LOGS_DIR / f"rank_{rank}.log"


def node_dir() -> Path:
    """Node-local (a job directory on a shared file system is seen by every node) and this user's own."""
    return Path(tempfile.gettempdir()) / f"primus-delivery-{os.getuid()}"


def private_node_dir() -> Path:
    """``node_dir()``, made when missing; raises PermissionError when it is not this user's alone: another user's
    process could reach what is put there (a run's pipes, a rank's stacks FIFO)."""
    folder = node_dir()
    folder.mkdir(mode=0o700, exist_ok=True)
    owner = folder.stat()
    if owner.st_uid != os.getuid() or owner.st_mode & 0o077:
        raise PermissionError(f"{folder} is not this user's private folder")
    return folder
