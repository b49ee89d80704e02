"""The stall drill on real Megatron: two ranks under torchrun, ``--primus-stall-after 3``, the rank that does not
write frozen with SIGSTOP past a log step (held there by a user's ``sitecustomize`` until then, so the run is as
short as the drill, however fast the steps). Before it hangs, the writer's delivery process is SIGKILLed, as the OOM
killer would: it is started again (a ``delivery_restarted`` alert). While the rank hangs, the writer waits in
upstream's collective: a ``stalled`` alert from the restarted watch reaches a local HTTP server and the writer's
stacks, saved by its delivery process, show the collective; after SIGCONT a ``resumed`` alert follows and the run
ends FINISHED with every step once in MLflow and the alerts' tags."""

from __future__ import annotations

import socket
import sys

import pytest
from megatron_runs import PRETRAIN_GPT, TINY_GPT_ARGS
from megatron_tracking_runs import toggles
from support.launch import kill_torchrun, start, torchrun_workers, wait_or_kill
from support.slow_rank import held_rank_env
from support.stall_drill import assert_stalled_then_resumed, kill_the_delivery_process, resume_then_open_the_gate
from support.timing import wait_for

from primus.tracking.health.webhook import WEBHOOK_ENV

pytestmark = pytest.mark.slow

ITERATIONS = 8
FREEZE_AFTER = 6  # the iteration after which the non-writer rank is held, then frozen
FROZEN = 0  # upstream's writer is the last rank
TRAIN_STEP = "megatron.training.training:train_step"  # called once per iteration
# where the writer waits for the frozen rank: the gradients' all-reduce (coalesced on 0.19), or another collective
COLLECTIVES = ("finish_grad_sync", "_coalescing_manager", "all_reduce", "all_gather", "reduce_scatter", "broadcast")


def test_a_frozen_rank_is_told_as_a_stall_with_the_writers_stacks_then_resumed(tmp_path, mlflow_uri, mlflow_client,
                                                                               webhook_receiver):
    log, run_dir, gate = tmp_path / "drill.log", tmp_path / "run", tmp_path / "users-site"
    launcher = start([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                      str(PRETRAIN_GPT), *TINY_GPT_ARGS, "--train-iters", str(ITERATIONS), *toggles(False, False, True),
                      "--mlflow-experiment-name", "h28-megatron-stall", "--primus-stall-after", "3",
                      "--primus-run-dir", str(run_dir)],
                     tmp_path, log, env={"MLFLOW_TRACKING_URI": mlflow_uri, WEBHOOK_ENV: webhook_receiver.url,
                                         **held_rank_env(gate, TRAIN_STEP, FROZEN, FREEZE_AFTER + 1)})
    try:
        wait_for(lambda: (gate / "held").exists(), 240, f"rank {FROZEN} held after iteration {FREEZE_AFTER}")
        workers = torchrun_workers(launcher.pid)
        assert sorted(workers) == [0, 1], workers
        frozen, writer = workers[FROZEN], workers[1]
        kill_the_delivery_process(writer, webhook_receiver.bodies)
        frozen.suspend()
        frozen_at = (gate / "held").stat().st_mtime  # when it stopped stepping
        wait_for(lambda: any(b["kind"] == "stalled" for b in webhook_receiver.bodies), 90, "the stalled alert")
        [stalled] = [b for b in webhook_receiver.bodies if b["kind"] == "stalled"]
        assert stalled["time"] >= frozen_at and stalled["experiment"] == "h28-megatron-stall"
        assert launcher.poll() is None  # told while it hangs
        writer_stacks = run_dir / "stacks" / f"{socket.gethostname()}-{writer.pid}.txt"
        wait_for(lambda: writer_stacks.exists() and any(f"in {c}" in writer_stacks.read_text() for c in COLLECTIVES),
                 60, "the writer's stacks in a collective")
        assert "megatron/training/training.py" in writer_stacks.read_text()
        resume_then_open_the_gate(frozen, gate, run_dir)
        returncode = wait_or_kill(launcher, 240)
    finally:
        kill_torchrun(launcher)
    assert returncode == 0, log.read_text()[-3000:]

    assert_stalled_then_resumed(webhook_receiver.bodies, log.read_text(), mlflow_client, "h28-megatron-stall",
                                "lm loss", ITERATIONS)
