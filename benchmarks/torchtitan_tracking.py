"""Cost of tracking on upstream torchtitan (llama3 debug model, CPU), side by side in one run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/torchtitan_tracking.py [--rounds 5] [--steps 30]

Variants run in pairs at the same time, side by side, so load on the machine hits both alike (each
pair's processes start together; a round runs every pair once; each round is one pair of each ratio,
reported by _measure.pair_ratios):
  off            every tracker off (the hub is never started)
  primus-all     Primus: TensorBoard + W&B (offline) + MLflow (local sqlite) + the perf metric set
  primus-tb-wb   Primus: TensorBoard + W&B (offline)
  upstream-tb-wb upstream's own TensorBoardLogger + WandBLogger (offline), only the CPU patches active
Step time: the gaps between upstream's own console step lines (log_freq 1), steps 3..N, median of the
gaps that ended while both processes of the pair were training (the one that starts training later
would otherwise get the machine to itself at the end).
Prints the ratios primus-all/off and primus-tb-wb/upstream-tb-wb (goal <= 1.02). Then CPU, which noise barely
moves: each variant once more, alone (_measure.run_measured, the benchmarks' CPU accounting on): the whole process
tree's CPU (trainer, torchrun, delivery process, wandb's service) per 1,000 logged steps, start-up included, and
the training thread's CPU in our code per logged step (primus-all: upstream's MetricsProcessor.log hook, with
the perf figures and our logger inside it).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from _measure import pair_ratios, run_measured, training_thread_lines, tree_cpu_line

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


PER_STEP_HOOK = "torchtitan.tracking.metrics_processor:log"


def variant_command(name: str, steps: int, workdir: Path) -> tuple[list[str], dict[str, str]]:
    args, extra_env = VARIANTS[name]
    dump = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "offline", "WANDB_SILENT": "true", **extra_env}
    env.pop("MLFLOW_TRACKING_URI", None)  # the local sqlite store next to the run
    command = [PRIMUS_RUN, PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
               "-m", "torchtitan.train", "--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel_cpu",
               "--training.steps", str(steps), "--metrics.log-freq", "1", "--dump-folder", str(dump), *args]
    return command, env


def start_variant(name: str, steps: int, workdir: Path) -> subprocess.Popen:
    command, env = variant_command(name, steps, workdir)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = {pair: [] for pair in PAIRS}
    with tempfile.TemporaryDirectory(prefix="titan-bench-") as tmp:
        workdir = Path(tmp)
        for r in range(args.rounds):
            for a, b in PAIRS:
                step = run_pair((a, b), args.steps, workdir)
                pairs[a, b].append((step[a], step[b]))
                print(f"round {r + 1}: {a} {step[a] * 1e3:.1f} ms/step, {b} {step[b] * 1e3:.1f} ms/step, "
                      f"ratio {step[b] / step[a]:.3f}", flush=True)
        for (a, b), measured in pairs.items():
            print(pair_ratios(f"{b} / {a}", measured))
        runs = {}
        for name in VARIANTS:
            runs[name] = run_measured(*variant_command(name, args.steps, workdir))
            if runs[name].returncode != 0:
                sys.exit(f"{name} failed ({runs[name].returncode}):\n{runs[name].output[-4000:]}")
    print(tree_cpu_line("torchtitan", {name: [m] for name, m in runs.items()}, args.steps))
    print(training_thread_lines("torchtitan", [runs["primus-all"]], PER_STEP_HOOK, args.steps))


if __name__ == "__main__":
    main()
