"""Two ranks of one node, each tracking its own run (TorchTitan's save_for_all_ranks): a delivery process per
rank (before) against one the node's ranks share (after, ``TrackingConfig.delivery_group``), side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/node_delivery.py [--runs 3] [--steps 100]

Each job is two rank processes that start a run with TensorBoard, W&B (offline) and MLflow (a local sqlite
store that exists already), log --steps steps of 30 metrics and finish; the two cases alternate. Per case,
medians over --runs jobs: the delivery processes (counted by their CPU accounting reports), their summed peak RSS
(VmHWM) and CPU, and the CPU of the job's whole process tree (ranks, delivery processes, wandb's services).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _measure import Measured, run_measured

RANK = """
import sys
from pathlib import Path
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
job, uri, steps, shared, rank = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "shared", sys.argv[5]
run = start_run(TrackingConfig(run_dir=job / f"rank_{rank}", tensorboard=TensorBoardConfig(job / f"tb_{rank}"),
                               wandb=WandbConfig(project="bench", save_dir=job / f"wandb_{rank}"),
                               mlflow=MlflowConfig(tracking_uri=uri), delivery_group=job if shared else None,
                               exit_deadline_s=120))
for step in range(steps):
    run.log(step, {f"metric_{i}": float(step * i) for i in range(30)})
run.finish()
"""
JOB = """
import subprocess, sys
ranks = [subprocess.Popen([sys.executable, "-c", *sys.argv[1:], str(rank)]) for rank in (0, 1)]
sys.exit(max(p.wait() for p in ranks))
"""
CASES = {"private": "one per rank (before)", "shared": "one per node (after)"}


def job(workdir: Path, store: Path, steps: int, case: str) -> Measured:
    root = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = run_measured([sys.executable, "-c", JOB, RANK, str(root / "job"), f"sqlite:///{store}", str(steps), case],
                        env)
    if done.returncode != 0 or len(done.delivery) != (1 if case == "shared" else 2):
        sys.exit(f"{case} job failed (exit {done.returncode}, {len(done.delivery)} delivery reports):\n"
                 f"{done.output[-4000:]}")
    return done


def figures(done: Measured) -> dict[str, float]:
    return {"processes": len(done.delivery), "rss": sum(d["peak_rss_mib"] for d in done.delivery),
            "cpu": sum(d["process_cpu_s"] for d in done.delivery), "tree": done.tree_cpu_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    measured: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="node-delivery-bench-") as tmp:
        store = Path(tmp) / "mlflow.db"
        job(Path(tmp), store, 1, "shared")  # makes the store: the jobs measured open an existing one
        for _ in range(args.runs):
            for case in CASES:
                measured[case].append(figures(job(Path(tmp), store, args.steps, case)))
    median = {case: {k: statistics.median(f[k] for f in runs) for k in runs[0]} for case, runs in measured.items()}
    before, after = median["private"], median["shared"]
    print(f"2 ranks, TensorBoard + W&B (offline) + MLflow (sqlite), {args.steps} steps of 30 metrics each, "
          f"median of {args.runs} jobs per case")
    print(f"  {'':34s}{CASES['private']:>24s}{CASES['shared']:>24s}")
    for key, label, unit in (("processes", "delivery processes", ""), ("rss", "delivery peak RSS, summed", " MiB"),
                             ("cpu", "delivery CPU, summed", " s"), ("tree", "process-tree CPU (whole job)", " s")):
        print(f"  {label:34s}{before[key]:>20.{0 if unit != ' s' else 2}f}{unit:4s}"
              f"{after[key]:>20.{0 if unit != ' s' else 2}f}{unit:4s}")
    print(f"node delivery, 2 ranks: delivery processes {before['processes']:.0f} / {after['processes']:.0f}, "
          f"peak RSS {before['rss']:.0f} / {after['rss']:.0f} MiB, CPU {before['cpu']:.1f} / {after['cpu']:.1f} s "
          f"(one per rank / one per node)")


if __name__ == "__main__":
    main()
