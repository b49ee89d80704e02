"""What every stall drill checks once its frozen rank ran again and the job ended: the webhook heard ``stalled``
then ``resumed``, the console said both, and the MLflow run is FINISHED with every step once and both tags."""

from __future__ import annotations

import socket
from pathlib import Path

from support.readers import mlflow_history
from support.slow_rank import open_gate
from support.timing import wait_for


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
    assert [b["kind"] for b in webhook_bodies] == ["stalled", "resumed"], webhook_bodies
    assert "[primus] ALERT stalled " in console and "[primus] ALERT resumed " in console
    [mlrun] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(experiment).experiment_id])
    assert mlrun.info.status == "FINISHED"
    assert [step for step, _ in mlflow_history(mlflow_client, mlrun.info.run_id, loss)] == list(range(1, steps + 1))
    assert mlrun.data.tags["primus.alert.stalled"].startswith(f"iteration {stalled['iteration']}: no step for ")
    assert mlrun.data.tags["primus.alert.resumed"].startswith("iteration ")
