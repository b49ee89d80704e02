"""Start-up of the delivery process (the child that feeds TensorBoard, W&B and MLflow from the journal).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/delivery_startup.py [--runs 3]

Each run is a fresh Python that starts a tracking run with TensorBoard, W&B (offline) and MLflow (a local
sqlite store), logs 30 steps of 30 metrics, and finishes; Primus's CPU accounting (``primus.cpu_accounting``)
has the delivery process report its CPU from its first instant until every sink has opened (interpreter,
imports, MLflow's store and run, ``wandb.init``) and its peak RSS (VmHWM; wandb's own service is a separate
process, not included). Two cases: a new MLflow store (created, its schema migrated) and the store of the
previous run (opened). Median of ``--runs``. The goal: <= 2 s CPU and <= 150 MiB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _measure import run_measured

PROBE = """
import sys
from pathlib import Path
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
root, uri = Path(sys.argv[1]), sys.argv[2]
run = start_run(TrackingConfig(run_dir=root / "run", tensorboard=TensorBoardConfig(root / "tb"),
                               wandb=WandbConfig(project="bench", save_dir=root / "wandb"),
                               mlflow=MlflowConfig(tracking_uri=uri), exit_deadline_s=120))
for step in range(30):
    run.log(step, {f"metric_{i}": float(step * i) for i in range(30)})
run.finish()
"""


def startup(store: Path, workdir: Path) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = run_measured([sys.executable, "-c", PROBE, str(root), f"sqlite:///{store}"], env)
    if done.returncode != 0 or len(done.delivery) != 1:
        sys.exit(f"probe failed (exit {done.returncode}, {len(done.delivery)} delivery reports):\n{done.output[-4000:]}")
    report = done.delivery[0]
    return report["startup_cpu_s"], report["peak_rss_mib"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float]]] = {"new MLflow store": [], "existing MLflow store": []}
    with tempfile.TemporaryDirectory(prefix="delivery-bench-") as tmp:
        for i in range(args.runs):
            store = Path(tmp) / f"mlflow-{i}.db"
            figures["new MLflow store"].append(startup(store, Path(tmp)))
            figures["existing MLflow store"].append(startup(store, Path(tmp)))
    for case, values in figures.items():
        print(f"  {case:22s} " + ", ".join(f"{cpu:.2f} s CPU {rss:.0f} MiB" for cpu, rss in values))
    cpu = statistics.median(c for c, _ in figures["existing MLflow store"])
    rss = statistics.median(r for _, r in figures["existing MLflow store"])
    new_cpu = statistics.median(c for c, _ in figures["new MLflow store"])
    print(f"MLflow + W&B + TensorBoard, median of {args.runs}; a new store: {new_cpu:.2f} s CPU; the line below is an "
          "existing store's (goal <= 2 s CPU, <= 150 MiB)")
    print(f"delivery process start-up: {cpu:.1f} s CPU, {rss:.0f} MiB")


if __name__ == "__main__":
    main()
