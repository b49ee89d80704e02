"""What the report tests share: the real tiny Megatron run they read, and their own reading of a journal
(plain json and gzip, not the code under test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.journal_files import journal_lines, run_dirs_under

REPO = Path(__file__).resolve().parents[2]
PRIMUS = str(Path(sys.executable).with_name("primus"))
TRAIN_ITERS = 4


def train_tiny_megatron(workdir: Path, env: dict[str, str] | None = None) -> Path:
    """`primus train` with configs/megatron/tiny_cpu.yaml for TRAIN_ITERS iterations, TensorBoard on (so the
    run has a journal), MLflow off, upstream's memory scalars on, ``env`` added; returns the run directory."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")},
           **(env or {})}
    env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PRIMUS_EXP_NAME="report")
    done = subprocess.run(
        [PRIMUS, "train", "--config", str(REPO / "configs/megatron/tiny_cpu.yaml"), f"train_iters={TRAIN_ITERS}",
         "disable_mlflow=true", "log_memory_to_tensorboard=true", f"workspace={workdir}"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    (run_dir,) = run_dirs_under(workdir / "report")
    return run_dir


def journal_metrics(run_dir: Path) -> dict[str, dict[int, float]]:
    """metric -> {step: value}, the last value written for a step."""
    out: dict[str, dict[int, float]] = {}
    for record in journal_lines(run_dir):
        if record["k"] == "m":
            for name, value in record["d"].items():
                out.setdefault(name, {})[record["s"]] = value
    return out
