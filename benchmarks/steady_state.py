"""Steady-state cost of tracking on upstream Megatron: the whole process tree's CPU per logged step, the delivery
process and wandb's service included, start-up taken out.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/steady_state.py [--rounds 3] [--short 20] [--long 80]

Each variant trains the tiny GPT of configs/megatron/tiny_cpu.yaml (log_interval 1) twice, ``--short`` and
``--long`` iterations; the slope (CPU of the long run - CPU of the short run) / (long - short) is the CPU one more
logged step costs, the start-up and the end of the run cancelling out. Variants, interleaved round by round:
  off            every tracker off (Primus's patches active, no tracking run)
  primus-tb-wb   Primus: TensorBoard + W&B (offline), fed by the delivery process
  primus-all     Primus: TensorBoard + W&B (offline) + MLflow to a local MLflow server + the perf metric set
The tree's CPU is counted by cgroup CPU accounting (_cgroup_cpu: every process the run starts is born in its own
transient cgroup and counted however it detaches; the MLflow server, started by this script, is outside it), or,
where no cgroup hierarchy is writable, by the subreaper sum of _measure.run_measured; the line says which. Median
of ``--rounds`` slopes per variant.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _cgroup_cpu import available
from _measure import run_measured
from megatron_tracking import ALL_OFF, CONFIG, PRIMUS, TB_WB, iteration_ms

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import MlflowServer  # noqa: E402

ALL_ON = ["disable_tensorboard=false", "disable_wandb=false", "disable_mlflow=false", "wandb_project=bench",
          "wandb_exp_name=bench", "mlflow_upload_performance_metrics=true"]
VARIANTS = {"off": ALL_OFF, "primus-tb-wb": TB_WB, "primus-all": ALL_ON}


def tree_cpu_s(name: str, iters: int, workdir: Path, mlflow_uri: str) -> float:
    workspace = Path(tempfile.mkdtemp(prefix=f"{name}-{iters}-", dir=workdir))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "WANDB_MODE": "offline",
           "WANDB_SILENT": "true", "MLFLOW_TRACKING_URI": mlflow_uri}
    command = [PRIMUS, "train", "--config", CONFIG, f"train_iters={iters}", "log_interval=1",
               f"workspace={workspace}", f"wandb_save_dir={workspace}", *VARIANTS[name]]
    cgroup, _ = available()
    if cgroup is not None:
        code, output, cpu = cgroup.run(command, env, cwd=workspace)
    else:
        done = run_measured(command, env, cwd=workspace)
        code, output, cpu = done.returncode, done.output, done.tree_cpu_s
    if code != 0 or len(iteration_ms(output, skip=0)) != iters:
        sys.exit(f"{name} ({iters} iterations) failed (exit {code}):\n{output[-4000:]}")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=20)
    parser.add_argument("--long", type=int, default=80)
    args = parser.parse_args()
    cgroup, why = available()
    method = cgroup.method if cgroup is not None else f"subreaper sum of RUSAGE_CHILDREN ({why})"
    names = list(VARIANTS)
    slopes: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="steady-state-") as tmp:
        server = MlflowServer(Path(tmp) / "server").start()
        try:
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    short = tree_cpu_s(name, args.short, Path(tmp), server.uri)
                    long = tree_cpu_s(name, args.long, Path(tmp), server.uri)
                    slopes[name].append((long - short) / (args.long - args.short) * 1e3)
                    print(f"round {r + 1} {name:13s} {args.short} it {short:6.2f} s, {args.long} it {long:6.2f} s CPU:"
                          f" {slopes[name][-1]:6.1f} ms per logged step", flush=True)
        finally:
            server.stop()
    print(f"megatron steady state: process-tree CPU per logged step ({method}; slope of {args.long}- vs "
          f"{args.short}-iteration runs, median of {args.rounds}): "
          + ", ".join(f"{n} {statistics.median(v):.1f} ms" for n, v in slopes.items())
          + " (each: " + "; ".join(f"{n} " + " ".join(f"{x:.1f}" for x in v) for n, v in slopes.items()) + ")")


if __name__ == "__main__":
    main()
