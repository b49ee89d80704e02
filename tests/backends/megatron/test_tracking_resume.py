"""A Megatron job that checkpoints and stops (--exit-interval), then restarts from its checkpoint
(--load), continues the same tracker runs: one MLflow run whose steps are 1..3 exactly once, one W&B
run id across both processes' offline files. W&B + MLflow on, TensorBoard off (that toggle combination
of test_tracking_toggles.py): TensorBoard writes nothing. log_progress (without log_throughput): upstream's
progress.txt beside the checkpoint, Primus's progress line with the ETA on the console, no perf/* tracked. The
two runs (session fixtures in conftest.py) also serve test_checkpoint_patches.py. The progress figures continue
across the restart: consumed samples and tokens from upstream's restored count, exact (iterations x global batch x
sequence length), in both trackers."""

from __future__ import annotations

import re

import pytest
from megatron_tracking_runs import (
    MLFLOW,
    PERF,
    RESUME_EXPERIMENT,
    UPSTREAM,
    WANDB,
    mlflow_runs,
    mlflow_steps,
    wandb_steps,
    wandb_values,
    without_one_logger,
    written_by,
)
from support.readers import mlflow_history, wandb_files, wandb_metric_definitions, wandb_run_ids

from primus.tracking.goodput.accounting import DEVIATION, EVERY_LOG_STEP
from primus.tracking.measure.names import mlflow_key
from primus.tracking.measure.progress import (
    AT_EVERY_LOG_STEP,
    CONSUMED_SAMPLES,
    CONSUMED_TOKENS,
    FROM_THE_SECOND_LOG_STEP,
    PROGRESS_GROUP,
)

GLOBAL_BATCH, SEQ_LENGTH = 8, 128  # megatron_runs.py's tiny model
# each process's first log step only starts the interval: the first process's second step (2) has the rates and the
# step time's deviation, the resumed process's only step (3) neither
TRACKED = {tag: [1, 2, 3] for tag in (*UPSTREAM, *AT_EVERY_LOG_STEP, *EVERY_LOG_STEP)} | {
    tag: [2] for tag in (*FROM_THE_SECOND_LOG_STEP, DEVIATION)}

pytestmark = pytest.mark.slow

def test_the_second_process_continues_from_the_checkpoint(stopped_then_resumed):
    first, second = stopped_then_resumed
    assert "iteration        2/" in first.output and "iteration        3/" not in first.output, first.explain()
    assert "iteration        3/" in second.output and "iteration        1/" not in second.output, second.explain()


def test_one_mlflow_run_with_every_step_once(stopped_then_resumed, mlflow_client):
    [run] = mlflow_runs(mlflow_client, RESUME_EXPERIMENT)
    assert run.info.status == "FINISHED"
    # no perf/*: neither --log-throughput nor the perf upload (--log-progress only prints them)
    assert without_one_logger(mlflow_steps(mlflow_client, run)) == {mlflow_key(t): s for t, s in TRACKED.items()}
    assert not set(PERF) & set(run.data.metrics)


def test_one_wandb_run_across_both_processes(stopped_then_resumed, checkpoint):
    assert len(wandb_files(checkpoint)) == 2  # one offline file per process ...
    assert len(wandb_run_ids(checkpoint)) == 1  # ... of the same run
    assert without_one_logger(wandb_steps(checkpoint)) == TRACKED


def test_tensorboard_off_writes_nothing(stopped_then_resumed, checkpoint):
    for run in stopped_then_resumed:
        assert written_by(run.log_path.parent)[MLFLOW] == [] and written_by(run.log_path.parent)[WANDB] == []
    assert written_by(checkpoint)["tensorboard"] == []


def test_log_progress(stopped_then_resumed, checkpoint):
    first, _ = stopped_then_resumed
    progress = (checkpoint / "progress.txt").read_text()
    saved = [line.split("\t")[4] for line in progress.splitlines() if "Saved checkpoint" in line]
    assert saved == ["Iteration: 2", "Iteration: 3"], progress  # one line per checkpoint, both processes
    assert re.search(r"\[primus\] iteration 2/3 \|.* ETA \d+:\d\d:\d\d", first.output), first.explain()


def test_consumed_samples_and_tokens_continue_after_the_resume(stopped_then_resumed, checkpoint, mlflow_client):
    [run] = mlflow_runs(mlflow_client, RESUME_EXPERIMENT)
    samples = {step: step * GLOBAL_BATCH for step in (1, 2, 3)}
    tokens = {step: n * SEQ_LENGTH for step, n in samples.items()}
    assert dict(mlflow_history(mlflow_client, run.info.run_id, CONSUMED_SAMPLES)) == samples
    assert dict(mlflow_history(mlflow_client, run.info.run_id, CONSUMED_TOKENS)) == tokens
    assert wandb_values(checkpoint, CONSUMED_TOKENS) == tokens  # step 3 from the resumed process


def test_wandb_draws_the_progress_group_against_consumed_tokens(stopped_then_resumed, checkpoint):
    """define_metric in each process's file: tokens an x-axis (summary max), the progress group on it; no other
    metric is given a step metric (they keep W&B's step)."""
    definitions = wandb_metric_definitions(checkpoint)
    assert definitions[CONSUMED_TOKENS]["summary"] == {"max"}
    assert definitions[PROGRESS_GROUP]["step_metric"] == CONSUMED_TOKENS
    assert {name for name, d in definitions.items() if d["step_metric"]} == {PROGRESS_GROUP}


def test_the_resumed_mlflow_run_has_the_second_processs_tags(stopped_then_resumed, mlflow_client):
    """A restart resumes the same MLflow run and sets this start's tags over the first's (its command, restart
    count, hosts)."""
    [run] = mlflow_runs(mlflow_client, RESUME_EXPERIMENT)
    command = run.data.tags["primus.launch_command"]
    assert "--load" in command and "--exit-interval" not in command
