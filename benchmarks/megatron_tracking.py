"""Step-time cost of tracking on upstream Megatron (tiny GPT of configs/megatron/tiny_cpu.yaml, CPU), side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/megatron_tracking.py [--rounds 3] [--iters 100]

Every variant runs `primus train --config configs/megatron/tiny_cpu.yaml` with log_interval 1; variants are
interleaved round by round (A B C D, then B C D A, ...) so load on the machine hits each alike:
  off            every tracker off (Primus's patches active, no tracking run)
  primus-all     Primus: TensorBoard + W&B (offline) + MLflow (local sqlite store), one hub behind upstream's writer,
                 the trackers fed by the delivery process (the default)
  primus-all-threads  the same with the trackers on threads of the training process (PRIMUS_TRACKING_DELIVERY=thread)
  primus-tb-wb   Primus: TensorBoard + W&B (offline)
  upstream-tb-wb upstream's own SummaryWriter and wandb writer (offline): PRIMUS_DISABLE_PATCHES=megatron.tracking.writers
Step time: upstream's own "elapsed time per iteration (ms)" (its interval timer spans the whole loop, writer
calls included), iterations 3..N, median per run. Prints each run, then the medians and the ratios
primus-all/off, primus-all-threads/off and primus-tb-wb/upstream-tb-wb (goal <= 1.02).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRIMUS = str(Path(sys.executable).with_name("primus"))
CONFIG = str(REPO / "configs/megatron/tiny_cpu.yaml")
ITERATION_MS = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples:.*?elapsed time per iteration \(ms\): ([0-9.]+)")

ALL_OFF = ["disable_tensorboard=true", "disable_wandb=true", "disable_mlflow=true"]
ALL_ON = ["disable_tensorboard=false", "disable_wandb=false", "disable_mlflow=false", "wandb_project=bench",
          "wandb_exp_name=bench"]
TB_WB = ["disable_tensorboard=false", "disable_wandb=false", "disable_mlflow=true", "wandb_project=bench",
         "wandb_exp_name=bench"]
VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "off": (ALL_OFF, {}),
    "primus-all": (ALL_ON, {}),
    "primus-all-threads": (ALL_ON, {"PRIMUS_TRACKING_DELIVERY": "thread"}),
    "primus-tb-wb": (TB_WB, {}),
    "upstream-tb-wb": (TB_WB, {"PRIMUS_DISABLE_PATCHES": "megatron.tracking.writers"}),
}


def iteration_ms(output: str, skip: int = 2) -> list[float]:
    return [float(ms) for it, ms in ITERATION_MS.findall(output) if int(it) > skip]


def run_variant(name: str, iters: int, workdir: Path) -> float:
    overrides, extra_env = VARIANTS[name]
    workspace = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "WANDB_MODE": "offline",
           "WANDB_SILENT": "true", **extra_env}
    env.pop("MLFLOW_TRACKING_URI", None)  # the local sqlite store next to the run
    command = [PRIMUS, "train", "--config", CONFIG, f"train_iters={iters}", "log_interval=1",
               f"workspace={workspace}", f"wandb_save_dir={workspace}", *overrides]  # upstream's W&B needs a dir
    done = subprocess.run(command, env=env, cwd=workspace, capture_output=True, text=True)
    output = done.stdout + done.stderr
    times = iteration_ms(output)
    if done.returncode != 0 or len(times) != iters - 2:
        sys.exit(f"{name} failed (exit {done.returncode}, {len(times)} timed iterations):\n{output[-4000:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=100)
    args = parser.parse_args()
    names = list(VARIANTS)
    results: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="megatron-bench-") as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                results[name].append(run_variant(name, args.iters, Path(tmp)))
                print(f"round {r + 1} {name:18s} {results[name][-1]:8.1f} ms/iteration", flush=True)
    step = {n: statistics.median(v) for n, v in results.items()}
    print(f"\n{'variant':18s} {'median ms/iter':>15s}   per round")
    for n in names:
        print(f"{n:18s} {step[n]:15.1f}   " + " ".join(f"{v:.1f}" for v in results[n]))
    print(f"\nprimus-all / off                  = {step['primus-all'] / step['off']:.3f}")
    print(f"primus-all-threads / off          = {step['primus-all-threads'] / step['off']:.3f}")
    print(f"primus-tb-wb / upstream-tb-wb     = {step['primus-tb-wb'] / step['upstream-tb-wb']:.3f}")
    print(f"upstream-tb-wb / off              = {step['upstream-tb-wb'] / step['off']:.3f}")


if __name__ == "__main__":
    main()
