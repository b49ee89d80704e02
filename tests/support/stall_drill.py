"""What every stall drill checks once its frozen rank ran again and the job ended: the webhook heard
``delivery_restarted`` (its delivery process was killed before the hang), ``stalled`` then ``resumed``, the console
said them, and the MLflow run is FINISHED with every step once and the tags."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil

from support.launch import delivery_processes
from support.readers import mlflow_history
from support.slow_rank import open_gate
from support.timing import wait_for

KINDS = ["delivery_restarted", "stalled", "resumed"]


def kill_the_delivery_process(writer: psutil.Process, webhook_bodies) -> None:
    """SIGKILL it as the OOM killer would, then wait for the one started in its place and for its alert."""
    [killed] = delivery_processes(writer).values()
    killed.kill()
    wait_for(lambda: delivery_processes(writer).keys() - {killed.pid}, 60, "a delivery process started again")
    wait_for(lambda: any(b["kind"] == "delivery_restarted" for b in webhook_bodies), 60, "the delivery_restarted alert")


def resume_then_open_the_gate(frozen, gate: Path, stacks_root: Path) -> None:
    """SIGCONT the frozen rank, wait until it has written the stacks the stall asked it for (the ask waited in its
    FIFO while it was stopped), then let it go on: the stacks show where it was held, not where it went next."""
    frozen.resume()
    wait_for(lambda: any("Thread 0x" in p.read_text()
                         for p in stacks_root.rglob(f"stacks/{socket.gethostname()}-{frozen.pid}.txt")),
             60, f"the frozen rank's (pid {frozen.pid}) stacks after SIGCONT")
    open_gate(gate)


def assert_stalled_then_resumed(webhook_bodies, console: str, mlflow_client, experiment: str, loss: str,
                                steps: int) -> None:
    [stalled] = [b for b in webhook_bodies if b["kind"] == "stalled"]
    assert [b["kind"] for b in webhook_bodies] == KINDS, webhook_bodies
    assert all(f"[primus] ALERT {kind} " in console for kind in KINDS)
    [mlrun] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(experiment).experiment_id])
    assert mlrun.info.status == "FINISHED"
    assert [step for step, _ in mlflow_history(mlflow_client, mlrun.info.run_id, loss)] == list(range(1, steps + 1))
    assert mlrun.data.tags["primus.alert.stalled"].startswith(f"iteration {stalled['iteration']}: no step for ")
    assert mlrun.data.tags["primus.alert.resumed"].startswith("iteration ")
    assert "was killed (signal 9); restarted (1 of " in mlrun.data.tags["primus.alert.delivery_restarted"]
