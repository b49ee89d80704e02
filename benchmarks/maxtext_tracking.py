"""Cost of tracking on upstream MaxText (the tiny CPU experiment, synthetic data), side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/maxtext_tracking.py [--rounds 5] [--steps 400]

MaxText runs on its own environment's interpreter (.venv-maxtext, as `primus train` picks it). Variants run
in pairs at the same time, so load on the machine hits both alike; each round is one pair of each ratio,
reported by _measure.pair_ratios:
  off             patches active, every tracker off (upstream's logger unchanged, no hub)
  primus-all      Primus: TensorBoard + W&B (offline) + MLflow (local sqlite) + the perf metric set
  primus-tb-wb    Primus: TensorBoard + W&B (offline)
  upstream-tb-wb  upstream alone, unpatched: its own tensorboardX writer and wandb (offline)
Step time: upstream's own ``perf/step_time_seconds`` (the wall time of one loop iteration, which includes
writing the previous step's metrics), from its metrics file, median over the second half of the steps: the
trackers start on background threads during the first seconds (MLflow's local sqlite store creates its schema,
wandb starts its service), which on a small CPU box competes with the first training steps. Prints the ratios
primus-all/off and primus-tb-wb/upstream-tb-wb (goal <= 1.02). Then CPU, which noise barely moves: each variant
once more, alone (_measure.run_measured, the benchmarks' CPU accounting on): the whole process tree's CPU (trainer,
delivery process, wandb's service) per 1,000 logged steps, start-up included, and the training thread's CPU in our
code per logged step (primus-all: upstream's MetricLogger.write_metrics hook, with the perf figures inside it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _measure import pair_ratios, run_measured, training_thread_lines, tree_cpu_line

from primus.backends.maxtext.upstream_argv import with_experiment
from primus.config import load_experiment
from primus.launch.job import interpreter

REPO = Path(__file__).resolve().parents[1]
TINY_CPU = REPO / "configs" / "maxtext" / "tiny_cpu.yaml"
PRIMUS_RUN = str(Path(sys.executable).parent / "primus-run")
UPSTREAM_TRAIN = ["-m", "maxtext.trainers.pre_train.train"]
TB_WB = ["enable_tensorboard=true", "enable_wandb=true"]
VARIANTS: dict[str, tuple[bool, list[str]]] = {  # (through primus-run, MaxText arguments)
    "off": (True, ["enable_tensorboard=false", "enable_mlflow=false"]),
    "primus-all": (True, [*TB_WB, "enable_mlflow=true", "mlflow_upload_performance_metrics=true"]),
    "primus-tb-wb": (True, [*TB_WB, "enable_mlflow=false"]),
    "upstream-tb-wb": (False, TB_WB),
}
PAIRS = (("off", "primus-all"), ("upstream-tb-wb", "primus-tb-wb"))
PER_STEP_HOOK = "maxtext.tracking.metric_logger:write_metrics"


def tiny_cpu_args() -> list[str]:
    """The tiny CPU experiment as MaxText's own key=value arguments, without Primus's keys (upstream alone
    would refuse them; the Primus variants give theirs on the command line)."""
    module = load_experiment(TINY_CPU).modules["pre_trainer"]
    return with_experiment([], {k: v for k, v in module.params.items() if k not in module.primus_keys}, None)


def variant_command(name: str, steps: int, workdir: Path) -> tuple[list[str], dict[str, str], Path]:
    """The command, its environment and its working directory (where its metrics file is written)."""
    patched, args = VARIANTS[name]
    out = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))  # run_name bench-<name>: "off" is YAML for false
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true",
           "WANDB_DIR": str(out), "JAX_PLATFORMS": "cpu"}
    env.pop("MLFLOW_TRACKING_URI", None)  # the local sqlite store next to the run
    command = [*([PRIMUS_RUN] if patched else []), interpreter("maxtext"), *UPSTREAM_TRAIN, *tiny_cpu_args(), *args,
               f"steps={steps}", f"base_output_directory={out}", f"run_name=bench-{name}",
               f"metrics_file={out / 'metrics.jsonl'}"]
    return command, env, out


def start_variant(name: str, steps: int, workdir: Path) -> tuple[subprocess.Popen, Path]:
    command, env, out = variant_command(name, steps, workdir)
    process = subprocess.Popen(command, cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return process, out / "metrics.jsonl"


def step_time(name: str, process: subprocess.Popen, metrics: Path, steps: int) -> float:
    output, _ = process.communicate()
    if process.returncode != 0:
        sys.exit(f"{name} failed ({process.returncode}):\n{output[-4000:]}")
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    times = [row["perf/step_time_seconds"] for row in rows if row["step"] >= steps // 2]
    if len(times) != steps - steps // 2:
        sys.exit(f"{name}: found {len(times)} step times, expected {steps - steps // 2}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="maxtext-bench-") as workdir:
        for round_ in range(args.rounds):
            for base, tracked in PAIRS:
                started = {name: start_variant(name, args.steps, Path(workdir)) for name in (base, tracked)}
                for name, (process, metrics) in started.items():
                    times[name].append(step_time(name, process, metrics, args.steps))
            print(f"round {round_ + 1}: " + "  ".join(f"{n} {v[-1] * 1e3:.2f} ms" for n, v in times.items()),
                  flush=True)
        print(f"\nmedian step time over {args.rounds} rounds, {args.steps} steps each (the second half):")
        for name, values in times.items():
            print(f"  {name:<15} {statistics.median(values) * 1e3:8.2f} ms")
        for base, tracked in PAIRS:
            print(pair_ratios(f"{tracked} / {base}", list(zip(times[base], times[tracked]))))
        runs = {}
        for name in VARIANTS:
            command, env, out = variant_command(name, args.steps, Path(workdir))
            runs[name] = run_measured(command, env, cwd=out)
            if runs[name].returncode != 0:
                sys.exit(f"{name} failed ({runs[name].returncode}):\n{runs[name].output[-4000:]}")
    print(tree_cpu_line("maxtext", {name: [m] for name, m in runs.items()}, args.steps))
    print(training_thread_lines("maxtext", [runs["primus-all"]], PER_STEP_HOOK, args.steps))


if __name__ == "__main__":
    main()
