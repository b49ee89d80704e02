"""After a run: where its results are and how to open them, read from the run directory."""

from __future__ import annotations

import json
from pathlib import Path

from primus.tracking.journal.files import JOURNAL_DIR, META_FILE, STATE_FILE


def describe_results(run_dir: Path) -> str:
    """One block per tracked run: the run directory itself, or its rank_N folders (save_for_all_ranks)."""
    tracked = [run_dir] if (run_dir / META_FILE).is_file() else sorted(run_dir.glob(f"rank_*/{META_FILE}"))
    if not tracked:
        return f"[primus] no tracking in this run (every tracker off); run directory {run_dir}"
    return "\n".join(_describe_one(path if path.is_dir() else path.parent) for path in tracked)


def _describe_one(run_dir: Path) -> str:
    meta = json.loads((run_dir / META_FILE).read_text())
    state = json.loads((run_dir / STATE_FILE).read_text()) if (run_dir / STATE_FILE).is_file() else {}
    lines = [f"[primus] results of {run_dir}:", f"  journal (every metric, replayable): {run_dir / JOURNAL_DIR}/"]
    if meta.get("tensorboard"):
        log_dir = meta["tensorboard"]["log_dir"]
        lines.append(f"  TensorBoard: {log_dir}   open: tensorboard --logdir {log_dir}")
    if meta.get("mlflow"):
        uri = meta["mlflow"]["tracking_uri"]
        run_id = state.get("mlflow", {}).get("run_id", "(not created yet)")
        how = f"mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite:") else f"open {uri}"
        lines.append(f"  MLflow: experiment {meta['mlflow']['experiment_name']!r}, run {run_id} at {uri}   open: {how}")
    if meta.get("wandb"):
        lines.append(
            f"  W&B ({meta['wandb']['mode']}): {meta['wandb']['save_dir']}"
            + ("   upload later: wandb sync <offline-run dir>" if meta["wandb"]["mode"] == "offline" else "")
        )
    return "\n".join(lines)
