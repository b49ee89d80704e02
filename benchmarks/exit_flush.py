"""Exit and flush time of a tracked run, with a healthy and with a dead MLflow server, side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/exit_flush.py [--steps 200] [--deadline 5] [--rounds 3]

Each round logs ``--steps`` steps of 20 metrics, then times ``Run.finish()`` for:
  journal-only     the journal alone (no tracker): the baseline
  mlflow-healthy   MLflow on a real local server (127.0.0.1), everything delivered before finish returns
  mlflow-dead      MLflow on a server killed before the run: finish waits at most exit_deadline_s
and, for comparison, upstream's synchronous pattern against the dead server: ``MlflowClient.set_terminated``
with MLflow's own retry defaults, in a subprocess capped at ``--cap`` seconds.
Also ``Run.flush()`` of a healthy run (everything logged so far delivered). Medians over rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import MlflowServer, free_port  # noqa: E402

from primus.tracking import MlflowConfig, TrackingConfig, start_run  # noqa: E402

NAMES = [f"metric_{i:02d}" for i in range(20)]
UPSTREAM_DEAD = """
import sys, time
from mlflow import MlflowClient
t = time.perf_counter()
try:
    MlflowClient(sys.argv[1]).set_terminated("0" * 32, "FINISHED")
except Exception:
    pass
print(time.perf_counter() - t)
"""


def tracked(root: Path, name: str, uri: str | None, deadline: float):
    mlflow = MlflowConfig(tracking_uri=uri, request_timeout_s=2) if uri else None
    return start_run(TrackingConfig(run_dir=root / name, experiment_name="exit-flush", mlflow=mlflow,
                                    exit_deadline_s=deadline))


def log_steps(run, steps: int) -> None:
    for step in range(steps):
        run.log(step, {n: step + i / 100 for i, n in enumerate(NAMES)})


def timed_finish(root: Path, name: str, uri: str | None, steps: int, deadline: float) -> float:
    """The exit of a run that has been training a while: its sinks started, one interval's steps outstanding."""
    run = tracked(root, name, uri, deadline)
    log_steps(run, 1)
    run.flush(10)  # False on the dead server, after these 10 s
    log_steps(run, steps)
    t = time.perf_counter()
    run.finish()
    return time.perf_counter() - t


def timed_flush(root: Path, uri: str, steps: int) -> float:
    run = tracked(root, "flush", uri, 60)
    log_steps(run, steps)
    t = time.perf_counter()
    assert run.flush(60)
    seconds = time.perf_counter() - t
    run.finish()
    return seconds


def upstream_dead(cap: float) -> float | None:
    dead = f"http://127.0.0.1:{free_port()}"
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_REQUEST")}  # MLflow's defaults
        out = subprocess.run([sys.executable, "-c", UPSTREAM_DEAD, dead], capture_output=True, text=True,
                             timeout=cap, env=env)
        return float(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--deadline", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"journal-only": [], "mlflow-healthy": [], "mlflow-dead": [], "flush-healthy": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = MlflowServer(root / "server").start()
        dead = f"http://127.0.0.1:{free_port()}"
        try:
            for r in range(args.rounds):
                times["journal-only"].append(timed_finish(root, f"base{r}", None, args.steps, args.deadline))
                times["mlflow-healthy"].append(timed_finish(root, f"healthy{r}", server.uri, args.steps, args.deadline))
                times["mlflow-dead"].append(timed_finish(root, f"dead{r}", dead, args.steps, args.deadline))
                times["flush-healthy"].append(timed_flush(root / f"f{r}", server.uri, args.steps))
        finally:
            server.stop()
    median = {k: statistics.median(v) for k, v in times.items()}
    print(f"finish() after {args.steps} steps x {len(NAMES)} metrics, exit_deadline_s={args.deadline}, "
          f"median of {args.rounds} rounds")
    for name, seconds in median.items():
        print(f"  {name:<15} {seconds * 1e3:9.1f} ms")
    print(f"ratio mlflow-healthy / journal-only = {median['mlflow-healthy'] / median['journal-only']:.2f}")
    print(f"ratio mlflow-dead / exit_deadline_s = {median['mlflow-dead'] / args.deadline:.2f}")
    upstream = upstream_dead(args.cap)
    shown = f"{upstream:.1f} s" if upstream is not None else f"> {args.cap:.0f} s (still retrying; stopped)"
    print(f"upstream pattern, MlflowClient.set_terminated on the dead server (MLflow's default retries): {shown}")
    if upstream is not None:
        print(f"ratio upstream-dead / mlflow-dead = {upstream / median['mlflow-dead']:.1f}")
    else:
        print(f"ratio upstream-dead / mlflow-dead > {args.cap / median['mlflow-dead']:.1f}")


if __name__ == "__main__":
    main()
