"""Soak: many logged steps x 60 metrics through a real tracking run (journal + TensorBoard in the delivery
process; a real MLflow server and W&B offline on the first ``--slice`` steps), to show that nothing grows with
the run's length and nothing is lost:

* journal bytes per logged step, and the journal's disk use raw vs on disk (closed segments gzipped);
* delivery lag (how far TensorBoard's delivery trails the journal, in seconds of logging), and the time to
  drain what was left at the end;
* the training thread's cost per logged step (``run.log``), p50 / p99 over the first and the last 10% of steps;
* peak RSS of the training process and of the delivery process over the first and the last 10% of the run;
* "lost": steps missing from the journal, scalars missing from TensorBoard's event files, points missing
  from MLflow and W&B on the slice, and records the hub dropped or could not journal; it must print 0.

The loop logs at ``--rate`` steps/s (a training step's pace; logging faster than the trackers can take
makes the lag grow, which the output shows). Run:

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/soak.py --steps 2000000   # the issue's full soak: hours here
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/soak.py --steps 100000 --rate 500

Not a test and not run by CI; ``run_all.py --quick`` runs a short one.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import MlflowServer  # noqa: E402
from support.readers import read_wandb_history  # noqa: E402

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run  # noqa: E402
from primus.tracking.delivery.process import CHILD_MODULE  # noqa: E402
from primus.tracking.journal.reader import journal_bytes, segments  # noqa: E402

NAMES = [f"perf/metric_{i:02d}" for i in range(60)]
SAMPLE_S = 1.0
MiB = 1 << 20


class Sampler(threading.Thread):
    """Every SAMPLE_S: (step reached, trainer RSS, delivery process RSS, TensorBoard's lag in journal bytes)."""

    def __init__(self, tracking, progress: list[int]):
        super().__init__(daemon=True)
        self.tracking, self.progress = tracking, progress
        self.samples: list[tuple[int, int, int, int]] = []
        self.stop = threading.Event()
        self.me = psutil.Process()

    def delivery(self) -> psutil.Process | None:
        return next((p for p in self.me.children() if CHILD_MODULE in " ".join(p.cmdline())), None)

    def run(self) -> None:
        child = None
        while not self.stop.wait(SAMPLE_S):
            child = child or self.delivery()
            child_rss = child.memory_info().rss if child is not None and child.is_running() else 0
            lag = self.tracking.stats()["sinks"]["tensorboard"]["pending_bytes"]
            self.samples.append((self.progress[0], self.me.memory_info().rss, child_rss, lag))


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def journal_metric_records(run_dir: Path) -> int:
    count = 0
    for segment in segments(run_dir):
        data = gzip.decompress(segment.path.read_bytes()) if segment.packed else segment.path.read_bytes()
        count += data.count(b'{"k":"m"')
    return count


def tensorboard_scalars(log_dir: Path) -> int:
    """Scalar values in TensorBoard's event files (TFRecord frames: length, crc, event, crc)."""
    from tensorboard.compat.proto.event_pb2 import Event

    values = 0
    for path in log_dir.rglob("events.out.tfevents.*"):
        with open(path, "rb") as f:
            while header := f.read(12):
                (length,) = struct.unpack("<Q", header[:8])
                values += len(Event.FromString(f.read(length)).summary.value)
                f.read(4)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2_000_000)
    parser.add_argument("--rate", type=float, default=500.0, help="logged steps per second (the training's pace)")
    parser.add_argument("--slice", type=int, default=2000, help="first steps also sent to MLflow and W&B")
    parser.add_argument("--segment-mib", type=int, default=64)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="primus-soak-"))
    os.environ.update(WANDB_MODE="offline", WANDB_DIR=str(work / "wandb"), WANDB_SILENT="true")
    (work / "wandb").mkdir()
    server = MlflowServer(work / "mlflow").start()
    try:
        soak(args, work, server.uri)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def soak(args, work: Path, mlflow_uri: str) -> None:
    run_dir, tb_dir = work / "run", work / "tb"
    run = start_run(TrackingConfig(run_dir=run_dir, experiment_name="soak", exit_deadline_s=24 * 3600,
                                   journal_segment_bytes=args.segment_mib * MiB,
                                   tensorboard=TensorBoardConfig(log_dir=tb_dir), wandb=WandbConfig(project="soak"),
                                   mlflow=MlflowConfig(tracking_uri=mlflow_uri)))
    costs = array("d", bytes(8 * args.steps))  # preallocated: the benchmark's own memory does not grow either
    progress = [0]
    sampler = Sampler(run, progress)
    sampler.start()
    only_tb = ("tensorboard",)
    started = time.monotonic()
    values = [float(i) for i in range(len(NAMES))]
    for step in range(args.steps):
        metrics = dict(zip(NAMES, values))
        values[step % len(values)] += 0.001  # values change, as training's do
        t = time.perf_counter()
        run.log(step, metrics, None if step < args.slice else only_tb)
        costs[step] = time.perf_counter() - t
        progress[0] = step
        if step % 100 == 99:  # pace in blocks: sleep until this step's time at --rate
            ahead = started + (step + 1) / args.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    logged_s = time.monotonic() - started
    t = time.monotonic()
    run.finish()  # waits (up to a day) for TensorBoard, MLflow and W&B to have everything
    drain_s = time.monotonic() - t
    sampler.stop.set()
    sampler.join()
    report(args, run, run_dir, tb_dir, work, costs, sampler.samples, logged_s, drain_s)


def report(args, run, run_dir, tb_dir, work, costs, samples, logged_s, drain_s) -> None:
    from mlflow import MlflowClient

    from primus.tracking.journal.run_state import RunState
    from primus.tracking.measure.names import mlflow_key

    n = args.steps
    window = max(1, n // 10)
    raw, disk = journal_bytes(run_dir)
    stats = run.stats()
    journaled = journal_metric_records(run_dir)
    scalars = tensorboard_scalars(tb_dir)
    mlflow_state = RunState(run_dir).section("mlflow")
    client = MlflowClient(mlflow_state.get("tracking_uri"))
    mlflow_points = len(client.get_metric_history(mlflow_state["run_id"], mlflow_key(NAMES[0])))
    wandb_rows = sum(NAMES[0] in row for row in read_wandb_history(work / "wandb"))
    slice_ = min(args.slice, n)
    lost = {"journal steps": n - journaled, "tensorboard scalars": n * len(NAMES) - scalars,
            "mlflow points (slice)": slice_ - mlflow_points, "wandb rows (slice)": slice_ - wandb_rows,
            "hub dropped": sum(stats["dropped"].values()) + stats["refused"],
            "not journaled": sum(stats["not_journaled"].values())}
    per_step = raw / max(1, journaled)
    print(f"soak: {n:,} logged steps x {len(NAMES)} metrics at {args.rate:g} steps/s; logged in {logged_s:,.0f} s, "
          f"drained in {drain_s:,.1f} s after the last step; {args.segment_mib} MiB segments; "
          f"MLflow + W&B offline on the first {slice_:,} steps")
    print(f"journal bytes per logged step: {per_step:,.0f}")
    print(f"journal disk: {raw / MiB:,.1f} MiB raw, {disk / MiB:,.1f} MiB on disk "
          f"({len(segments(run_dir))} segments; ratio raw / on disk = {raw / max(1, disk):.2f})")

    def us(part) -> str:
        return f"p50 {statistics.median(part) * 1e6:,.1f} us, p99 {percentile(part, 0.99) * 1e6:,.1f} us"

    print(f"training thread per logged step: first 10% {us(costs[:window])}; last 10% {us(costs[-window:])}")
    first = [s for s in samples if s[0] < window]
    last = [s for s in samples if s[0] >= n - window]
    for label, column in (("trainer", 1), ("delivery process", 2)):
        def peak(part):
            return max((s[column] for s in part), default=0) / MiB
        print(f"peak RSS {label}: first 10% {peak(first):,.1f} MiB; last 10% {peak(last):,.1f} MiB; "
              f"whole run {peak(samples):,.1f} MiB")
    lags = [s[3] / per_step / args.rate for s in samples]
    if lags:
        print(f"delivery lag (TensorBoard behind the journal, seconds of logging): p50 {statistics.median(lags):.2f} s, "
              f"max {max(lags):.2f} s; last 10% max {max((s[3] / per_step / args.rate for s in last), default=0):.2f} s")
    print(f"lost: {sum(lost.values())}  ({', '.join(f'{k} {v}' for k, v in lost.items())})")


if __name__ == "__main__":
    main()
