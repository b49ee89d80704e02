"""Training-thread cost per logged step (20 metrics), side by side in one run:

* the Primus hub with TensorBoard + W&B offline + MLflow (a real local server) + the journal on;
* synchronous ``mlflow.log_metric`` per metric (Megatron-Bridge's pattern), same server;
* ``wandb.log`` per metric (upstream Megatron's pattern), offline;
* ``SummaryWriter.add_scalar`` per metric (upstream Megatron's TensorBoard writer).

Each "training step" sleeps ``STEP_S`` after logging, so background threads run as they would
between steps. Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/hub_overhead.py`` (~1-2 min).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import SERVER_ENV, MlflowServer, free_port  # noqa: E402

NAMES = [f"metric_{i:02d}" for i in range(20)]
STEP_S = 0.002


def metrics(step: int) -> dict[str, float]:
    return {n: step + i / 100 for i, n in enumerate(NAMES)}


def measure(steps: int, log_step: Callable[[int], None]) -> list[float]:
    costs = []
    for step in range(steps):
        t = time.perf_counter()
        log_step(step)
        costs.append(time.perf_counter() - t)
        time.sleep(STEP_S)
    return costs


def row(name: str, costs: list[float], note: str = "") -> str:
    us = sorted(c * 1e6 for c in costs)
    p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
    return f"| {name} | {len(us)} | {statistics.median(us):,.1f} | {p99:,.1f} | {us[-1]:,.0f} | {note} |"


def bench_hub(work: Path, uri: str) -> tuple[list[float], str]:
    from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run

    t = time.perf_counter()
    run = start_run(TrackingConfig(run_dir=work / "hub", experiment_name="bench-hub",
                                   tensorboard=TensorBoardConfig(work / "hub-tb"), wandb=WandbConfig(project="bench"),
                                   mlflow=MlflowConfig(tracking_uri=uri), exit_deadline_s=120))
    started = time.perf_counter() - t
    costs = measure(3000, lambda s: run.log(s, metrics(s)))
    t = time.perf_counter()
    delivered = run.flush(120)
    flushed = time.perf_counter() - t
    run.finish()
    from mlflow import MlflowClient

    points = len(MlflowClient(uri).get_metric_history(run.mlflow_run_id, NAMES[7]))
    return costs, (f"start_run {started * 1e3:.0f} ms; flush after the loop {flushed:.1f} s; "
                   f"all delivered: {delivered}, MLflow has {points}/3000 steps")


def bench_mlflow_sync(uri: str) -> list[float]:
    import mlflow

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("bench-sync")
    with mlflow.start_run():
        return measure(40, lambda s: [mlflow.log_metric(n, v, step=s) for n, v in metrics(s).items()])


def bench_wandb_per_metric(work: Path) -> list[float]:
    import wandb

    run = wandb.init(project="bench", dir=str(work), mode="offline", settings=wandb.Settings(console="off"))
    costs = measure(300, lambda s: [run.log({n: v}, step=s) for n, v in metrics(s).items()])
    run.finish()
    return costs


def bench_tensorboard(work: Path) -> list[float]:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(work / "tb"), max_queue=1000)
    costs = measure(1000, lambda s: [writer.add_scalar(n, v, s) for n, v in metrics(s).items()])
    writer.close()
    return costs


def main() -> None:
    os.environ.update({**SERVER_ENV, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_ERROR_REPORTING": "false",
                       "WANDB_BASE_URL": f"http://127.0.0.1:{free_port()}", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"})
    with tempfile.TemporaryDirectory(prefix="primus-bench-") as tmp:
        work = Path(tmp)
        os.environ["WANDB_DIR"] = str(work)
        server = MlflowServer(work / "mlflow").start()
        try:
            import torch  # noqa: F401  (a training process has it loaded already)

            hub, note = bench_hub(work, server.uri)
            rows = [row("Primus hub: TB + W&B offline + MLflow server + journal", hub, note),
                    row("mlflow.log_metric per metric (sync, local server)", bench_mlflow_sync(server.uri)),
                    row("wandb.log per metric (offline)", bench_wandb_per_metric(work)),
                    row("SummaryWriter.add_scalar per metric (max_queue=1000)", bench_tensorboard(work))]
        finally:
            server.stop()
    print(f"training-thread cost per logged step, 20 metrics, {STEP_S * 1e3:.0f} ms simulated step, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| method | steps | p50 µs | p99 µs | max µs | notes |\n|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
