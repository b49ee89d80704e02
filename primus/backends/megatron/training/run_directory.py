"""Where a Megatron run keeps its journal, run ids and derived tracker folders.

Explicit --primus-run-dir wins. Else <save>/primus, so a job restarted from its checkpoint finds
its run ids and resumes the same MLflow/W&B runs. Else a fresh timestamped folder under
PRIMUS_OUTPUT_ROOT (default output/megatron): without a checkpoint a restart is a new run."""

from __future__ import annotations

import os
import time
from pathlib import Path


def derive_run_dir(args, now: float | None = None) -> Path:
    if args.primus_run_dir:
        return Path(args.primus_run_dir)
    if args.save:
        return Path(args.save) / "primus"
    root = Path(os.environ.get("PRIMUS_OUTPUT_ROOT", "output/megatron"))
    return root / time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


def default_run_name(args, run_dir: Path) -> str:
    """The run's name when none is given: the checkpoint folder's name for <save>/primus."""
    if not args.primus_run_dir and args.save:
        return Path(args.save).resolve().name
    return run_dir.name
