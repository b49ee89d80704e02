"""The run directory `primus train` gives a job (primus.launch.job with the shared rule of
primus.config.run_directory): a checkpointed job gets the same one at every launch, inside its checkpoint
folder, so a relaunch resumes its tracker runs; a job without checkpoints gets a new one per launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from primus.backends.megatron.tracking_plan import default_run_name, derive_run_dir
from primus.config import load_experiment
from primus.config.environment import OVERRIDES_ENV, RUN_DIR_ENV
from primus.config.schemas import schema_for, upstream_tables
from primus.backends.torchtitan import schema as torchtitan_schema
from primus.launch.job import prepare_job, run_directory

REPO = Path(__file__).resolve().parents[2]
TITAN = REPO / "configs" / "torchtitan" / "llama3_debug_cpu.yaml"
MEGATRON = REPO / "configs" / "megatron" / "tiny_cpu.yaml"
PREFIX = "modules.pre_trainer.overrides."


def titan_job(tmp_path: Path, *overrides: str):
    exp = load_experiment(TITAN, [f"workspace={tmp_path}", *overrides])
    job = prepare_job(exp, exp.modules["pre_trainer"], overrides)
    return exp, job, json.loads(job.env[OVERRIDES_ENV])


def test_checkpointed_torchtitan_job_resumes_its_run_directory_at_every_launch(tmp_path):
    exp, job, derived = titan_job(tmp_path, "checkpoint.enable=true")
    assert job.run_dir == tmp_path / "llama3_debug_cpu" / "checkpoint" / "primus" == Path(job.env[RUN_DIR_ENV])
    # upstream saves to <dump_folder>/checkpoint: the dump folder every launch shares
    assert f"{PREFIX}dump_folder={tmp_path / 'llama3_debug_cpu'}" in derived
    assert f"{PREFIX}metrics.mlflow_experiment_name=llama3_debug_cpu" in derived
    module = exp.modules["pre_trainer"]
    assert run_directory(exp, module, now=0) == run_directory(exp, module, now=86400) == job.run_dir


def test_checkpoint_folder_and_dump_folder_of_the_experiment_are_followed(tmp_path):
    _, job, derived = titan_job(tmp_path, "checkpoint.enable=true", "checkpoint.folder=ckpt",
                                f"dump_folder={tmp_path / 'out'}", "metrics.mlflow_experiment_name=mine")
    assert job.run_dir == tmp_path / "out" / "ckpt" / "primus"
    assert derived == ["checkpoint.enable=true", "checkpoint.folder=ckpt", f"dump_folder={tmp_path / 'out'}",
                       "metrics.mlflow_experiment_name=mine"]  # nothing derived: the experiment said it all


@pytest.fixture
def torchtitan_0_2_2_schema(monkeypatch):
    """The TorchTitan schema as with 0.2.2 installed (schemas are cached: rebuilt before and after)."""
    monkeypatch.setattr(torchtitan_schema, "table", lambda: upstream_tables.select("torchtitan", "0.2.2"))
    schema_for.cache_clear()
    yield
    monkeypatch.undo()
    schema_for.cache_clear()


def test_a_torchtitan_0_2_2_job_dump_folder_is_followed(tmp_path, torchtitan_0_2_2_schema):
    # 0.2.2 keeps the dump folder in its job section (0.3: dump_folder at the top)
    _, job, derived = titan_job(tmp_path, "checkpoint.enable=true", f"job.dump_folder={tmp_path / 'out'}")
    assert job.run_dir == tmp_path / "out" / "checkpoint" / "primus"
    assert not [d for d in derived if d.startswith(f"{PREFIX}dump_folder=")]


def test_torchtitan_job_without_checkpoints_gets_a_new_run_directory_that_holds_its_outputs(tmp_path):
    exp = load_experiment(TITAN, [f"workspace={tmp_path}"])
    module = exp.modules["pre_trainer"]
    first, second = run_directory(exp, module, now=0), run_directory(exp, module, now=86400)
    assert first != second and first.parent == second.parent == tmp_path / "llama3_debug_cpu"
    _, job, derived = titan_job(tmp_path)
    assert f"{PREFIX}dump_folder={job.run_dir}" in derived


def test_megatron_keeps_its_rule_and_names_a_checkpointed_run_after_its_checkpoint_folder(tmp_path):
    exp = load_experiment(MEGATRON, [f"workspace={tmp_path}", f"save={tmp_path / 'gpt-ckpt'}"])
    run_dir = run_directory(exp, exp.modules["pre_trainer"])
    assert run_dir == tmp_path / "gpt-ckpt" / "primus"

    class Args:  # the launched process's parsed arguments: the launcher's run directory, explicit
        primus_run_dir, save = str(run_dir), str(tmp_path / "gpt-ckpt")

    assert derive_run_dir(Args) == run_dir and default_run_name(Args, run_dir) == "gpt-ckpt"
