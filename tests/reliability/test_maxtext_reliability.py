"""Faults on real upstream MaxText trainings (0.2.5 on JAX, the tiny CPU model, on the MaxText environment's
interpreter), read back from the real MLflow servers, TensorBoard event files and the W&B offline run:

* the MLflow server killed mid-run and restarted: the training keeps its pace, every step reaches MLflow
  exactly once, FINISHED;
* SIGTERM mid-run: KILLED, every step upstream had written delivered; the restart from MaxText's own
  checkpoint continues the same MLflow and W&B runs, a re-trained step that was tracked is not tracked
  twice, every step once, FINISHED.

MaxText writes a step's metrics while the next step trains (``MetricLogger``'s one-deep buffer), so a job
stopped before step n has written steps up to n-2 (``MAXTEXT.logged_before``): step n-1 was trained but never
written by upstream, and only a restart from a checkpoint at or before it tracks it.

The hung server, the exception and W&B unreachable of test_reliability_faults.py are not repeated: behind
MaxText's ``MetricLogger`` are the same hub, journal and sinks those scenarios exercise on two backends, and
the suite's time goes to what differs here (upstream's deferred writes, its checkpointer, its interpreter)."""

from __future__ import annotations

import signal
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from reliability_runs import (
    MAXTEXT,
    Training,
    delivered,
    end_events,
    journal_steps,
    mlflow_run_id,
    mlflow_steps,
    tb_steps,
)
from support.readers import read_wandb_history, wandb_run_ids

pytestmark = pytest.mark.slow

KILL_AT, RESTART_AT, FAULT_STEPS = 3, 5, 8
SIGTERM_AT, RESUMED_STEPS, CHECKPOINT_EVERY = 7, 10, 4  # checkpoints after steps 0 and 4; step 5 is re-trained
CHECKPOINT_WAIT_S = 120.0


@dataclass
class Runs:
    faults: Training  # against the fault server, killed at KILL_AT and restarted at RESTART_AT
    killed: Training
    resumed: Training
    killed_status: str  # the MLflow run's, before the restart
    killed_steps: list[int]  # delivered to MLflow before the restart
    killed_journal: list[int]
    killed_ends: list[str]  # the end records' statuses before the restart


def wait_for_checkpoint(training: Training, step: int) -> None:
    """Until MaxText's asynchronous checkpointer has committed ``step`` (Orbax renames it into place)."""
    folder = training.workdir / "out" / "run" / "checkpoints" / str(step)
    deadline = time.monotonic() + CHECKPOINT_WAIT_S
    while not folder.is_dir():
        assert time.monotonic() < deadline, f"no checkpoint {folder}: {training.result().explain()}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def runs(mlflow_server, _fault_server, session_client, tmp_path_factory) -> Runs:
    """The server-fault run and the run to be killed train side by side (most of a MaxText run is imports and
    compilation); the restart follows the kill."""
    from mlflow import MlflowClient

    server = _fault_server
    faults = Training(MAXTEXT, tmp_path_factory.mktemp("maxtext-server-faults"),
                      MAXTEXT.args(FAULT_STEPS, "h10-maxtext-faults"), env={"MLFLOW_TRACKING_URI": server.uri},
                      gates=(KILL_AT, RESTART_AT))
    killed_dir = tmp_path_factory.mktemp("maxtext-killed")
    env = {"MLFLOW_TRACKING_URI": mlflow_server.uri, "WANDB_MODE": "offline"}
    args = [*MAXTEXT.args(RESUMED_STEPS, "h10-maxtext-killed", wandb=True),
            *MAXTEXT.checkpoint(CHECKPOINT_EVERY, load=False)]
    killed = Training(MAXTEXT, killed_dir, args, name="killed", env=env, gates=(SIGTERM_AT,))

    client = MlflowClient(server.uri)
    try:
        faults.wait_at(KILL_AT)
        delivered(client, faults, MAXTEXT, MAXTEXT.logged_before(KILL_AT))  # the run exists, steps are arriving
        server.kill()
        faults.go(KILL_AT)  # steps KILL_AT-1 .. RESTART_AT-2 are written with no server at all
        faults.wait_at(RESTART_AT)
        server.restart()
        delivered(client, faults, MAXTEXT, MAXTEXT.logged_before(RESTART_AT))  # replayed by the sink by itself
        faults.go(RESTART_AT)
    finally:
        if not server.healthy():
            server.restart()

    killed.wait_at(SIGTERM_AT)
    wait_for_checkpoint(killed, 4)
    killed.signal(signal.SIGTERM)  # as a scheduler preempting the job does
    killed.wait()
    run_id = mlflow_run_id(killed.run_dir())
    status, logged = session_client.get_run(run_id).info.status, mlflow_steps(session_client, run_id, MAXTEXT)
    journaled = journal_steps(killed.run_dir(), MAXTEXT.loss)
    ends = [e["status"] for e in end_events(killed.run_dir())]
    resumed = Training(MAXTEXT, killed_dir, args, name="resumed", env=env)
    faults.wait()
    resumed.wait()
    return Runs(faults, killed, resumed, status, logged, journaled, ends)


def test_server_killed_and_restarted_loses_and_duplicates_nothing(runs, _fault_server):
    from mlflow import MlflowClient

    training = runs.faults
    result = training.result()
    assert result.returncode == 0, result.explain()
    every_step = MAXTEXT.steps(FAULT_STEPS)
    assert journal_steps(training.run_dir(), MAXTEXT.loss) == every_step
    client = MlflowClient(_fault_server.uri)
    run_id = mlflow_run_id(training.run_dir())
    assert mlflow_steps(client, run_id, MAXTEXT) == every_step
    assert client.get_run(run_id).info.status == "FINISHED"
    assert tb_steps(training.workdir, MAXTEXT) == every_step  # TensorBoard never noticed


def test_training_keeps_its_pace_while_the_server_is_down(runs):
    seconds = MAXTEXT.step_seconds(runs.faults)  # upstream's own step time, as tracked
    healthy = [seconds[s] for s in range(1, KILL_AT)]  # step 0 includes compilation
    down = [seconds[s] for s in range(KILL_AT + 1, RESTART_AT)]  # a gated step includes the test's wait
    assert max(down) < 2.0 + 3 * statistics.median(healthy), (healthy, down)


def test_sigterm_marks_the_run_killed_with_every_written_step_delivered(runs):
    result = runs.killed.result()
    assert result.returncode == -signal.SIGTERM, result.explain()
    assert runs.killed_journal == MAXTEXT.logged_before(SIGTERM_AT)
    assert runs.killed_ends == ["KILLED"]
    assert runs.killed_status == "KILLED"
    assert runs.killed_steps == MAXTEXT.logged_before(SIGTERM_AT)


def test_restart_from_checkpoint_continues_the_same_runs_without_duplicate_steps(runs, session_client):
    result = runs.resumed.result()
    assert result.returncode == 0, result.explain()
    assert "completed step: 5," in result.output and "completed step: 4," not in result.output  # from checkpoint 4
    run_dir: Path = runs.resumed.run_dir()
    assert run_dir == runs.killed.run_dir()
    experiment = session_client.get_experiment_by_name("h10-maxtext-killed")
    [run] = session_client.search_runs([experiment.experiment_id])
    assert run.info.run_id == mlflow_run_id(run_dir) and run.info.status == "FINISHED"
    every_step = MAXTEXT.steps(RESUMED_STEPS)
    assert mlflow_steps(session_client, run.info.run_id, MAXTEXT) == every_step
    assert journal_steps(run_dir, MAXTEXT.loss) == every_step
    assert end_events(run_dir)[-1]["dropped"].get("already_tracked", 0) == 1  # step 5: trained twice, tracked once
    workdir = runs.resumed.workdir
    assert len(wandb_run_ids(workdir)) == 1
    assert sorted(r["_step"] for r in read_wandb_history(workdir) if MAXTEXT.loss in r) == every_step
    assert tb_steps(workdir, MAXTEXT) == every_step
