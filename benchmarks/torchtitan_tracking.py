"""Step-time cost of tracking on upstream torchtitan (llama3 debug model, CPU), side by side in one run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/torchtitan_tracking.py [--rounds 2] [--steps 30]

Variants run in pairs at the same time, side by side, so load on the machine hits both alike (each
pair's processes start together; a round runs every pair once; ratios are medians over rounds):
  off            every tracker off (the hub is never started)
  primus-all     Primus: TensorBoard + W&B (offline) + MLflow (local sqlite) + the perf metric set
  primus-tb-wb   Primus: TensorBoard + W&B (offline)
  upstream-tb-wb upstream's own TensorBoardLogger + WandBLogger (offline), only the CPU patches active
Step time: the gaps between upstream's own console step lines (log_freq 1), steps 3..N, median of the
gaps that ended while both processes of the pair were training (the one that starts training later
would otherwise get the machine to itself at the end).
Prints the ratios primus-all/off and primus-tb-wb/upstream-tb-wb (goal <= 1.02), and the training-thread
cost of one logged step (``Run.log`` of upstream's 17-metric dict, all sinks on).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

PYTHON = sys.executable
PRIMUS_RUN = str(Path(PYTHON).parent / "primus-run")
CPU_PATCHES_ONLY = "torchtitan.cpu.device,torchtitan.cpu.fsdp_sum_reduction"
LINE = re.compile(r"\[titan\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?step:\s+(\d+)\s+loss")
ANSI = re.compile(r"\x1b\[[0-9;]*m")

VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "off": ([], {}),
    "primus-all": (["--metrics.enable-tensorboard", "--metrics.enable-wandb", "--metrics.enable-mlflow",
                    "--metrics.mlflow-upload-performance-metrics"], {}),
    "primus-tb-wb": (["--metrics.enable-tensorboard", "--metrics.enable-wandb"], {}),
    "upstream-tb-wb": (["--metrics.enable-tensorboard", "--metrics.enable-wandb"],
                       {"PRIMUS_PATCHES": CPU_PATCHES_ONLY}),
}


def step_gaps(output: str) -> list[tuple[float, float]]:
    """(end time, seconds) of each step after the second, from upstream's console timestamps."""
    stamps = {int(step): datetime.strptime(ts, "%Y-%m-%d %H:%M:%S,%f").timestamp()
              for ts, step in LINE.findall(ANSI.sub("", output))}
    steps = sorted(stamps)
    return [(stamps[b], stamps[b] - stamps[a]) for a, b in zip(steps, steps[1:]) if a >= 2]


PAIRS = (("off", "primus-all"), ("upstream-tb-wb", "primus-tb-wb"))


def start_variant(name: str, steps: int, workdir: Path) -> subprocess.Popen:
    args, extra_env = VARIANTS[name]
    dump = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "offline", "WANDB_SILENT": "true", **extra_env}
    env.pop("MLFLOW_TRACKING_URI", None)  # the local sqlite store next to the run
    command = [PRIMUS_RUN, PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
               "-m", "torchtitan.train", "--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel_cpu",
               "--training.steps", str(steps), "--metrics.log-freq", "1", "--dump-folder", str(dump), *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def gaps_of(name: str, process: subprocess.Popen, steps: int) -> list[tuple[float, float]]:
    output, _ = process.communicate()
    if process.returncode != 0:
        sys.exit(f"{name} failed ({process.returncode}):\n{output[-4000:]}")
    gaps = step_gaps(output)
    if len(gaps) < steps - 3:
        sys.exit(f"{name}: found {len(gaps)} step gaps, expected {steps - 3}")
    return gaps


def run_pair(pair: tuple[str, str], steps: int, workdir: Path) -> dict[str, float]:
    processes = {name: start_variant(name, steps, workdir) for name in pair}
    gaps = {name: gaps_of(name, p, steps) for name, p in processes.items()}
    start = max(g[0][0] - g[0][1] for g in gaps.values())
    end = min(g[-1][0] for g in gaps.values())
    both = {name: [s for t, s in g if start < t <= end] for name, g in gaps.items()}
    if min(len(v) for v in both.values()) < 5:
        sys.exit(f"{pair}: the two runs trained at the same time for too few steps; raise --steps")
    return {name: statistics.median(v) for name, v in both.items()}


def log_call_microseconds(workdir: Path, calls: int = 500) -> float:
    """Training-thread cost of one logged step: Run.log with upstream's metric dict, every sink on."""
    from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run

    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true")
    hub = workdir / "hub"
    run = start_run(TrackingConfig(run_dir=hub / "run", tensorboard=TensorBoardConfig(hub / "tb"),
                                   wandb=WandbConfig(project="bench"), mlflow=MlflowConfig(), exit_deadline_s=300))
    metrics = {k: 1.5 for k in ("loss_metrics/global_avg_loss", "loss_metrics/global_max_loss", "grad_norm",
                                "throughput(tps)", "tflops", "mfu(%)", "time_metrics/end_to_end(s)",
                                "time_metrics/data_loading(s)", "time_metrics/data_loading(%)",
                                "memory/max_active(GiB)", "memory/max_active(%)", "memory/max_reserved(GiB)",
                                "memory/max_reserved(%)", "memory/num_alloc_retries", "memory/num_ooms",
                                "n_tokens_seen", "lr/AdamW")}
    started = time.perf_counter()
    for step in range(calls):
        run.log(step, metrics)
    elapsed = time.perf_counter() - started
    run.finish()
    return elapsed / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {f"{b} / {a}": [] for a, b in PAIRS}
    with tempfile.TemporaryDirectory(prefix="titan-bench-") as tmp:
        workdir = Path(tmp)
        for r in range(args.rounds):
            for a, b in PAIRS:
                step = run_pair((a, b), args.steps, workdir)
                ratios[f"{b} / {a}"].append(step[b] / step[a])
                print(f"round {r + 1}: {a} {step[a] * 1e3:.1f} ms/step, {b} {step[b] * 1e3:.1f} ms/step, "
                      f"ratio {step[b] / step[a]:.3f}", flush=True)
        log_us = log_call_microseconds(workdir)
    for name, values in ratios.items():
        print(f"{name:32s} = {statistics.median(values):.3f} (median of {', '.join(f'{v:.3f}' for v in values)})")
    print(f"Run.log per logged step (17 metrics, all sinks): {log_us:.1f} us on the training thread")


if __name__ == "__main__":
    main()
