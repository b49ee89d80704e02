"""A Megatron job that checkpoints and stops (--exit-interval), then restarts from its checkpoint
(--load), continues the same tracker runs: one MLflow run whose steps are 1..3 exactly once, one W&B
run id across both processes' offline files. W&B + MLflow on, TensorBoard off (that toggle combination
of test_tracking_toggles.py): TensorBoard writes nothing. log_progress: upstream's progress.txt beside
the checkpoint and the ETA line on the console."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import (
    MLFLOW,
    PERF,
    UPSTREAM,
    WANDB,
    at,
    mlflow_runs,
    mlflow_steps,
    toggles,
    wandb_steps,
    written_by,
)
from support.readers import wandb_files, wandb_run_ids

from primus.tracking.names import mlflow_key

pytestmark = pytest.mark.slow

EXPERIMENT = "h6-resume"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tmp_path_factory.mktemp("resume-ckpt")


@pytest.fixture(scope="module")
def stopped_then_resumed(megatron_run, mlflow_server, checkpoint):
    args = (*toggles(False, True, True), "--wandb-project", EXPERIMENT, "--mlflow-experiment-name", EXPERIMENT,
            "--log-throughput", "--log-progress", "--save", str(checkpoint), "--save-interval", "2")
    env = {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": mlflow_server.uri}
    first = megatron_run("resume-first", *args, "--exit-interval", "2", env=env)
    assert first.returncode == 0, first.explain()
    second = megatron_run("resume-second", *args, "--load", str(checkpoint), env=env)
    assert second.returncode == 0, second.explain()
    return first, second


def test_the_second_process_continues_from_the_checkpoint(stopped_then_resumed):
    first, second = stopped_then_resumed
    assert "iteration        2/" in first.output and "iteration        3/" not in first.output, first.explain()
    assert "iteration        3/" in second.output and "iteration        1/" not in second.output, second.explain()


def test_one_mlflow_run_with_every_step_once(stopped_then_resumed, mlflow_client):
    [run] = mlflow_runs(mlflow_client, EXPERIMENT)
    assert run.info.status == "FINISHED"
    expected = at([1, 2, 3], *UPSTREAM) | at([2], *PERF)  # no perf at 3: the restart's first log step is a baseline
    assert mlflow_steps(mlflow_client, run) == {mlflow_key(tag): steps for tag, steps in expected.items()}


def test_one_wandb_run_across_both_processes(stopped_then_resumed, checkpoint):
    assert len(wandb_files(checkpoint)) == 2  # one offline file per process ...
    assert len(wandb_run_ids(checkpoint)) == 1  # ... of the same run
    steps = wandb_steps(checkpoint)
    assert {tag: steps[tag] for tag in UPSTREAM} == at([1, 2, 3], *UPSTREAM)


def test_tensorboard_off_writes_nothing(stopped_then_resumed, checkpoint):
    for run in stopped_then_resumed:
        assert written_by(run.log_path.parent)[MLFLOW] == [] and written_by(run.log_path.parent)[WANDB] == []
    assert written_by(checkpoint)["tensorboard"] == []


def test_log_progress(stopped_then_resumed, checkpoint):
    first, _ = stopped_then_resumed
    progress = (checkpoint / "progress.txt").read_text()
    saved = [line.split("\t")[4] for line in progress.splitlines() if "Saved checkpoint" in line]
    assert saved == ["Iteration: 2", "Iteration: 3"], progress  # one line per checkpoint, both processes
    assert "[primus] iteration 2/3 | tokens/s/GPU" in first.output and "ETA 0:00:" in first.output
