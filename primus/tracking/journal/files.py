"""Every file and folder of a run directory, by name, and the one module that writes each.

* ``run.json``: the tracker run ids (a restarted job resumes the same MLflow and W&B runs), the run's status, what
  each sink finished (``state.RunState``, shared by the training process and its delivery process).
* ``meta.json``: the redacted params, tags and tracker settings (``meta.RunMeta``).
* ``journal/``: the records, in segments (``journal_writer``; gzipped and deleted by ``journal_keeper``);
  ``journal.jsonl``, the single-file journal of run directories written before segments.
* ``cursors/<sink>.json``: how far each sink delivered (``state.CursorStore``).
* ``.lock``: one live process per run directory, else two would interleave the journal (``state.RunDirLock``);
  ``.delivery.lock``: held by the process that feeds the trackers (``state.delivery_lock``).
* ``logs/``, ``traces/``, ``reports/``: the run's own files, uploaded to MLflow when asked (``sinks.mlflow``);
  ``logs/rank_<n>.log``: a rank's console (``rank_log_file``); ``traces/`` also holds Megatron's memory snapshot.
* ``structured_logs/``: TorchTitan's per-rank structured logs, written here instead of ``<dump_folder>`` when they
  are uploaded (with the logs).
* ``checkpoints/<alias>.json``: a manifest per checkpoint saved (its iteration, path, seconds, size), uploaded
  to MLflow as a reference (``sinks.mlflow``).
* ``stacks/<host>-<pid>.txt``: every thread's stack of a rank, written when the run stalled (``stacks``); uploaded
  with the logs.
* ``tensorboard/``, ``wandb/``: TensorBoard's event files and W&B's run files, unless the user names other folders
  (the backends' ``tracking_plan``).
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
