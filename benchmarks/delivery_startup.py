"""Start-up of the delivery process (the child that feeds TensorBoard, W&B and MLflow from the journal).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/delivery_startup.py [--runs 3]

Each run is a fresh Python that starts a tracking run with TensorBoard, W&B (offline) and MLflow, logs 30 steps
of 30 metrics, and finishes; the benchmarks' CPU accounting (``_cpu_accounting/``) has the delivery process report
its CPU from its first instant until every sink has opened (interpreter, imports, MLflow's run, ``wandb.init``)
and its peak RSS (VmHWM, over the whole process's life; wandb's own service is a separate process, not
included). Three cases: an MLflow tracking server on 127.0.0.1 (the light REST client; the goal line), a new
local sqlite store (created, its schema migrated: the full MLflow client) and that store again (opened).
Median of ``--runs``. The goal: <= 2 s CPU and <= 150 MiB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import MlflowServer  # noqa: E402

SERVER = "MLflow server (REST)"
NEW_STORE, OLD_STORE = "new sqlite store", "existing sqlite store"

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


def startup(uri: str, workdir: Path, server: MlflowServer) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = run_measured([sys.executable, "-c", PROBE, str(root), uri], env, keep=[server.proc.pid])
    if done.returncode != 0 or len(done.delivery) != 1:
        sys.exit(f"probe failed (exit {done.returncode}, {len(done.delivery)} delivery reports):\n{done.output[-4000:]}")
    report = done.delivery[0]
    return report["startup_cpu_s"], report["peak_rss_mib"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float]]] = {SERVER: [], NEW_STORE: [], OLD_STORE: []}
    with tempfile.TemporaryDirectory(prefix="delivery-bench-") as tmp:
        server = MlflowServer(Path(tmp) / "server").start()
        try:
            for i in range(args.runs):
                store = f"sqlite:///{Path(tmp) / f'mlflow-{i}.db'}"
                figures[SERVER].append(startup(server.uri, Path(tmp), server))
                figures[NEW_STORE].append(startup(store, Path(tmp), server))
                figures[OLD_STORE].append(startup(store, Path(tmp), server))
        finally:
            server.stop()
    for case, values in figures.items():
        print(f"  {case:22s} " + ", ".join(f"{cpu:.2f} s CPU {rss:.0f} MiB" for cpu, rss in values))
    median = {case: (statistics.median(c for c, _ in values), statistics.median(r for _, r in values))
              for case, values in figures.items()}
    print(f"MLflow + W&B + TensorBoard, median of {args.runs}; a local sqlite store (the full MLflow client): "
          f"{median[OLD_STORE][0]:.2f} s CPU, {median[OLD_STORE][1]:.0f} MiB; the line below is with an MLflow "
          "server (goal <= 2 s CPU, <= 150 MiB)")
    print(f"delivery process start-up: {median[SERVER][0]:.1f} s CPU, {median[SERVER][1]:.0f} MiB")


if __name__ == "__main__":
    main()
