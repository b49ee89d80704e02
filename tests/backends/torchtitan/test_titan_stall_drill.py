"""The stall drill on real TorchTitan: two FSDP ranks under torchrun, ``--metrics.primus-stall-after 3``, the rank
that does not log frozen with SIGSTOP past a log step (held there by a user's ``sitecustomize`` until then, so the run
is as short as the drill, however fast the steps). Before it hangs, the metrics rank's delivery process is SIGKILLed,
as the OOM killer would: it is started again (a ``delivery_restarted`` alert). While the rank hangs, the metrics rank
waits in a collective: a ``stalled`` alert from the restarted watch reaches a local HTTP server and that rank's stacks
show the collective; after SIGCONT a ``resumed`` alert follows and the run ends FINISHED with every step once in
MLflow and the alerts' tags."""

from __future__ import annotations

import socket
import sys

import pytest
from support.launch import kill_torchrun, start, torchrun_workers, wait_or_kill
from support.slow_rank import held_rank_env
from support.stall_drill import assert_stalled_then_resumed, kill_the_delivery_process, resume_then_open_the_gate
from support.timing import wait_for
from titan_runs import V0_3

from primus.backends.torchtitan.assets import ASSETS_ENV, VERSION, ensure_tiny_assets
from primus.tracking.health.webhook import WEBHOOK_ENV

pytestmark = pytest.mark.slow

STEPS = 8
FREEZE_AFTER = 5  # the step after which the rank that does not log is held, then frozen
FROZEN = 1  # upstream logs from rank 0
TRAIN_STEP = "torchtitan.trainer:Trainer.train_step"  # called once per step
# where the metrics rank waits for the frozen one: held before a step, at the step's first collective (upstream's
# token count over ranks, a functional collective: its wait_tensor); inside a step, FSDP's collectives
COLLECTIVES = ("wait_tensor", "all_gather", "reduce_scatter", "all_reduce", "broadcast", "_coalescing_manager")


def test_a_frozen_rank_is_told_as_a_stall_with_the_logging_ranks_stacks_then_resumed(
        tmp_path, titan_assets, mlflow_uri, mlflow_client, webhook_receiver):
    log, dump, gate = tmp_path / "drill.log", tmp_path / "dump", tmp_path / "users-site"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "primus.backends.torchtitan", *V0_3.model_args,
               *V0_3.cpu_args(ensure_tiny_assets(titan_assets / VERSION)), "--training.steps", str(STEPS),
               V0_3.dump_flag, str(dump), "--parallelism.data-parallel-shard-degree", "2",
               "--metrics.enable-mlflow", "--metrics.mlflow-experiment-name", "h28-titan-stall",
               "--metrics.primus-stall-after", "3"]
    env = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", ASSETS_ENV: str(titan_assets), **V0_3.env(),
           "MLFLOW_TRACKING_URI": mlflow_uri, WEBHOOK_ENV: webhook_receiver.url,
           **held_rank_env(gate, TRAIN_STEP, FROZEN, FREEZE_AFTER + 1)}
    launcher = start(command, tmp_path, log, env)
    try:
        wait_for(lambda: (gate / "held").exists(), 360, f"rank {FROZEN} held after step {FREEZE_AFTER}")
        workers = torchrun_workers(launcher.pid)
        assert sorted(workers) == [0, 1], workers
        metrics_rank, frozen = workers[0], workers[FROZEN]
        kill_the_delivery_process(metrics_rank, webhook_receiver.bodies)
        frozen.suspend()
        frozen_at = (gate / "held").stat().st_mtime  # when it stopped stepping
        wait_for(lambda: any(b["kind"] == "stalled" for b in webhook_receiver.bodies), 90, "the stalled alert")
        [stalled] = [b for b in webhook_receiver.bodies if b["kind"] == "stalled"]
        assert stalled["time"] >= frozen_at and stalled["experiment"] == "h28-titan-stall"
        assert launcher.poll() is None  # told while it hangs
        wait_for(lambda: any(any(f"in {c}" in p.read_text() for c in COLLECTIVES)
                             for p in dump.rglob(f"stacks/{socket.gethostname()}-{metrics_rank.pid}.txt")),
                 60, "the metrics rank's stacks in a collective")
        resume_then_open_the_gate(frozen, gate, dump)
        returncode = wait_or_kill(launcher, 300)
    finally:
        kill_torchrun(launcher)
    assert returncode == 0, log.read_text()[-3000:]

    assert_stalled_then_resumed(webhook_receiver.bodies, log.read_text(), mlflow_client, "h28-titan-stall",
                                "loss_metrics/global_avg_loss", STEPS)
