"""Where a Megatron run keeps its journal, run ids and derived tracker folders (the shared rule,
primus.config.run_directory): explicit --primus-run-dir; else <save>/primus, so a job restarted from
its checkpoint resumes the same MLflow/W&B runs; else a fresh timestamped folder under
PRIMUS_OUTPUT_ROOT (default output/megatron): without a checkpoint a restart is a new run."""

from __future__ import annotations

import os
from pathlib import Path

from primus.config.run_directory import CHECKPOINTED_RUN_DIR, choose_run_dir, timestamp


def derive_run_dir(args, now: float | None = None) -> Path:
    root = Path(os.environ.get("PRIMUS_OUTPUT_ROOT", "output/megatron"))
    return choose_run_dir(explicit=args.primus_run_dir, checkpoint_dir=args.save, fresh=root / timestamp(now))


def default_run_name(args, run_dir: Path) -> str:
    """The run's name when none is given: the checkpoint folder's name for <save>/primus (derived here,
    or chosen by `primus train`)."""
    if args.save and run_dir == Path(args.save) / CHECKPOINTED_RUN_DIR:
        return Path(args.save).resolve().name
    return run_dir.name
