"""One rank of the stall drill (test_stall_drill.py): two ranks on CPU with gloo, an all_reduce per step; rank 0
writes the tracked run (stall after 4 s), rank 1 registers for stacks. argv: rank, port, run dir, steps."""

import datetime
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from primus.tracking import MlflowConfig, TrackingConfig, start_run
from primus.tracking.health.stacks import register_for_stacks
from primus.tracking.settings.config import HealthSettings

rank, port, run_dir, steps = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=300))
run = None
if rank == 0:
    run = start_run(TrackingConfig(run_dir=run_dir, experiment_name="stall-drill", mlflow=MlflowConfig(),
                                   health=HealthSettings(stall_after_s=4.0, startup_s=120), exit_deadline_s=120))
    run.install_exit_handlers()
else:
    register_for_stacks(run_dir)


def train_step(step: int) -> float:
    t = torch.full((8,), float(step))
    dist.all_reduce(t)  # a peer that stops holds this rank here, in C
    return float(t[0])


for step in range(1, steps + 1):
    train_step(step)
    if run is not None:
        run.log(step, {"lm loss": 1.0 / step, "perf/tokens_per_sec": 1000.0})
    print(f"step {step}", flush=True)
    time.sleep(0.2)
dist.barrier()
dist.destroy_process_group()
