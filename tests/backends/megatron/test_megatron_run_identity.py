"""Where a Megatron run ran and the user's own labels, read back from every tracker of the every-tracker run
(megatron_tracking_runs.py: a Slurm job step under pyxis, restarted once, one CPU process, labelled with
--mlflow-tags, --mlflow-description, --wandb-tags and --wandb-notes): the MLflow run's tags, the W&B offline run's
tags, notes and config, and the one TensorBoard text of the run's tags."""

from __future__ import annotations

import shlex

import pytest
from megatron_tracking_runs import RUNS, finished, mlflow_runs, result, tb_event_files
from support.readers import read_tb_texts, wandb_config, wandb_files, wandb_records

from primus.tracking.trackers.tensorboard import TAGS_TAG

pytestmark = pytest.mark.slow

IDENTITY = {
    "primus.slurm.job_id": "4242",
    "primus.slurm.array_job_id": "4240",
    "primus.slurm.array_task_id": "2",
    "primus.slurm.restart_count": "1",
    "primus.hosts.count": "2",
    "primus.hosts.first": "gpu007",
    "primus.container.image": "nvcr.io#nvidia/pytorch:25.01-py3",
    "primus.container.image_from": "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
    # one process, Megatron's own degrees
    "primus.world_size": "1",
    "primus.parallel.tp": "1",
    "primus.parallel.pp": "1",
    "primus.parallel.dp": "1",
    "primus.parallel.cp": "1",
    "primus.parallel.ep": "1",
    "primus.backend": "megatron",
}
USER = {"team": "llm", "owner": "ci", "mlflow.note.content": "tiny gpt on cpu"}


@pytest.fixture(scope="module")
def all_run(megatron_run, mlflow_server):
    run = result(megatron_run, mlflow_server.uri, "all")
    assert run.returncode == 0, run.explain()
    return run


@pytest.fixture
def mlflow_tags(all_run, mlflow_client):
    assert finished("all").returncode == 0
    [run] = mlflow_runs(mlflow_client, RUNS["all"].experiment)
    return run.data.tags


def test_mlflow_run_says_where_it_ran_and_carries_the_users_tags(mlflow_tags):
    assert {k: mlflow_tags.get(k) for k in {**IDENTITY, **USER}} == {**IDENTITY, **USER}
    assert not [k for k in mlflow_tags if k.startswith("primus.accelerator.")]  # a CPU host: none, no failure


def test_the_launch_command_is_the_processs_own(mlflow_tags):
    words = shlex.split(mlflow_tags["primus.launch_command"])
    assert words[1].endswith("pretrain_gpt.py") and words[words.index("--mlflow-tags") + 1] == "team=llm,owner=ci"


def test_wandb_run_has_the_users_tags_and_notes_and_the_identity_in_its_config(all_run):
    root = all_run.log_path.parent
    [run_file] = wandb_files(root)
    [record] = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    assert (list(record.tags), record.notes) == (["cpu", "h6"], "every tracker on")
    primus_tags = wandb_config(root)["primus_tags"]
    assert {k: primus_tags.get(k) for k in IDENTITY} == IDENTITY
    assert primus_tags["team"] == "llm"


def test_tensorboard_has_the_runs_tags_once_as_a_table(all_run):
    [logdir] = {p.parent for p in tb_event_files(all_run.log_path.parent)}
    [(step, table)] = read_tb_texts(logdir)[f"{TAGS_TAG}/text_summary"]
    assert step == 0
    rows = dict(line.strip("| ").split(" | ", 1) for line in table.splitlines()[2:])
    assert {k: rows.get(k) for k in {**IDENTITY, **USER}} == {**IDENTITY, **USER}

