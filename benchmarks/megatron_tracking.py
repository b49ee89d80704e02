"""Cost of tracking on upstream Megatron (tiny GPT of configs/megatron/tiny_cpu.yaml, CPU), side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/megatron_tracking.py [--rounds 5] [--iters 100]

Every variant runs `primus train --config configs/megatron/tiny_cpu.yaml` with log_interval 1; variants are
interleaved round by round (A B C D, then B C D A, ...) so load on the machine hits each alike:
  off            every tracker off (Primus's patches active, no tracking run)
  primus-all     Primus: TensorBoard + W&B (offline) + MLflow (local sqlite store) + the perf metric set (as the
                 TorchTitan and MaxText benchmarks), one hub behind upstream's writer,
                 the trackers fed by the delivery process (the default)
  primus-all-threads  the same with the trackers on threads of the training process (PRIMUS_TRACKING_DELIVERY=thread)
  primus-all-no-one-logger  primus-all with One-Logger off (enable_one_logger=false): what One-Logger (on by default:
                 upstream's one_logger_utils on the training thread, nv-one-logger in the delivery process) costs
  primus-tb-wb   Primus: TensorBoard + W&B (offline)
  upstream-tb-wb upstream's own SummaryWriter and wandb writer (offline): PRIMUS_DISABLE_PATCHES=megatron.tracking.writers
Step time: upstream's own "elapsed time per iteration (ms)" (its interval timer spans the whole loop, writer
calls included), iterations 3..N, median per run. Each round is one pair of every ratio: primus-all/off,
primus-all-threads/off, primus-tb-wb/upstream-tb-wb (goal <= 1.02), upstream-tb-wb/off (_measure.pair_ratios).
CPU, which noise barely moves (_measure.run_measured; every run has the benchmarks' CPU accounting on, two clock reads
per hook call): the whole process tree's CPU (trainer, delivery process, wandb's service) per 1,000 logged steps,
start-up included, for every variant; and the training thread's CPU in our code per logged step, the figure issue
#43 states Megatron's goal in (<= 40 us) and `benchmarks/_step_cost.py` prints by hand: the CPU of the call of the
training_log patch's wrapper (PER_STEP_HOOK, once per logged step: our code before and after upstream's
training_log, and every call of ours upstream makes inside it: the writer's add_scalar per tag, the object behind
upstream's One-Logger callbacks) less upstream's own code and the instrument's own cost (_cpu_accounting), over the
logged steps; median of the runs. Its last line, "megatron: training-thread CPU per logged step", is primus-all's
(One-Logger on, the default); primus-all-no-one-logger's is labelled "megatron (One-Logger off)".
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from _measure import Measured, pair_ratios, run_measured, training_thread_lines, tree_cpu_line

REPO = Path(__file__).resolve().parents[1]
PRIMUS = str(Path(sys.executable).with_name("primus"))
CONFIG = str(REPO / "configs/megatron/tiny_cpu.yaml")
ITERATION_MS = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples:.*?elapsed time per iteration \(ms\): ([0-9.]+)")

ALL_OFF = ["disable_tensorboard=true", "disable_wandb=true", "disable_mlflow=true"]
ALL_ON = ["disable_tensorboard=false", "disable_wandb=false", "disable_mlflow=false", "wandb_project=bench",
          "wandb_exp_name=bench", "mlflow_upload_performance_metrics=true"]
TB_WB = ["disable_tensorboard=false", "disable_wandb=false", "disable_mlflow=true", "wandb_project=bench",
         "wandb_exp_name=bench"]
VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "off": (ALL_OFF, {}),
    "primus-all": (ALL_ON, {}),
    "primus-all-threads": (ALL_ON, {"PRIMUS_TRACKING_DELIVERY": "thread"}),
    "primus-all-no-one-logger": ([*ALL_ON, "enable_one_logger=false"], {}),
    "primus-tb-wb": (TB_WB, {}),
    "upstream-tb-wb": (TB_WB, {"PRIMUS_DISABLE_PATCHES": "megatron.tracking.writers"}),
}


def iteration_ms(output: str, skip: int = 2) -> list[float]:
    return [float(ms) for it, ms in ITERATION_MS.findall(output) if int(it) > skip]


def run_variant(name: str, iters: int, workdir: Path) -> tuple[float, Measured]:
    overrides, extra_env = VARIANTS[name]
    workspace = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "WANDB_MODE": "offline",
           "WANDB_SILENT": "true", **extra_env}
    env.pop("MLFLOW_TRACKING_URI", None)  # the local sqlite store next to the run
    command = [PRIMUS, "train", "--config", CONFIG, f"train_iters={iters}", "log_interval=1",
               f"workspace={workspace}", f"wandb_save_dir={workspace}", *overrides]  # upstream's W&B needs a dir
    done = run_measured(command, env, cwd=workspace)
    times = iteration_ms(done.output)
    if done.returncode != 0 or len(times) != iters - 2:
        sys.exit(f"{name} failed (exit {done.returncode}, {len(times)} timed iterations):\n{done.output[-4000:]}")
    return statistics.median(times), done


PAIRS = (("off", "primus-all"), ("off", "primus-all-threads"), ("upstream-tb-wb", "primus-tb-wb"),
         ("off", "upstream-tb-wb"), ("primus-all-no-one-logger", "primus-all"))
PER_STEP_HOOK = "megatron.tracking.training_log:training_log"  # upstream's training_log, and our writer inside it
# the variants whose training-thread CPU per logged step is printed, as labelled: the defaults' last, the one line
# `make bench`'s headline (run_all.HEADLINE) takes
STEP_COST_LABELS = {"primus-all-no-one-logger": "megatron (One-Logger off)", "primus-all": "megatron"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--only", default=",".join(VARIANTS), help="the variants to run, comma-separated")
    args = parser.parse_args()
    names = [n for n in VARIANTS if n in args.only.split(",")]
    step: dict[str, list[float]] = {n: [] for n in names}
    runs: dict[str, list[Measured]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="megatron-bench-") as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                ms, measured = run_variant(name, args.iters, Path(tmp))
                step[name].append(ms)
                runs[name].append(measured)
                print(f"round {r + 1} {name:18s} {ms:8.1f} ms/iteration  process tree {measured.tree_cpu_s:6.1f} s CPU",
                      flush=True)
    print(f"\n{'variant':18s} {'median ms/iter':>15s}   per round")
    for n in names:
        print(f"{n:18s} {statistics.median(step[n]):15.1f}   " + " ".join(f"{v:.1f}" for v in step[n]))
    print()
    for base, variant in (p for p in PAIRS if set(p) <= set(names)):
        print(pair_ratios(f"{variant} / {base}", list(zip(step[base], step[variant]))))
    print(tree_cpu_line("megatron", runs, args.iters))
    for name, label in STEP_COST_LABELS.items():
        if name in names:
            print(f"\n{name}:")
            print(training_thread_lines(label, runs[name], PER_STEP_HOOK, args.iters))


if __name__ == "__main__":
    main()
