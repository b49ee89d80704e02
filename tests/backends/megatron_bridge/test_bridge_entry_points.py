"""The entry points a Megatron-Bridge user runs, on CPU with real Bridge 0.6.2:

* `primus train --config configs/megatron_bridge/tiny_cpu.yaml`: a recipe plus ConfigContainer overrides, checked
  against Bridge's own field types before anything starts, then Bridge's ``pretrain()``; one two-process (gloo)
  training serves every check of it here (each rank's planning: test_bridge_tracking_plan.py);
* run_recipe.py's path under `primus-run torchrun`: run_recipe.py is not in the wheel and a test reaches the package
  index only, so tiny_run_recipe.py makes the same library calls it makes (recipe function -> dataset preset ->
  KEY=VALUE overrides -> sequence length from the dataset -> ``pretrain(config, forward_step)``).

Each training is read back in TensorBoard, MLflow and W&B (offline). The trainings import this checkout's ``primus``
(support/this_primus.py), not the one .venv-bridge was installed with."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.launch import FinishedRun, kill_torchrun, start, wait_or_kill
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history, wandb_files, wandb_run_ids
from support.slow_rank import slow_rank_env
from support.this_primus import this_primus_folder, with_this_primus

from primus.backends.megatron_bridge.recipe import overrides
from primus.cli.main import main
from primus.config.schemas import schema_for
from primus.tracking.measure import stragglers as straggler

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "configs" / "megatron_bridge" / "tiny_cpu.yaml"
BRIDGE_PYTHON = REPO / ".venv-bridge" / "bin" / "python"
RUN_RECIPE = Path(__file__).with_name("tiny_run_recipe.py")
ITERATIONS = 4
STEPS = list(range(1, ITERATIONS + 1))
# primus train's two ranks: rank 0 (not the writer) made slower before each forward step by a user's sitecustomize
FORWARD_STEP, SLOW_RANK, SLOW_S = "megatron.core.pipeline_parallel.schedules:forward_step", 0, 0.3
TIMEOUT_S = 500.0
_CONSOLE_LOSS = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?\| lm loss: (\S+) \|")
# the tiny config's fields as run_recipe.py's KEY=VALUE overrides (its convenience flags spelled out)
TINY_OVERRIDES = [
    "model.num_layers=2", "model.hidden_size=64", "model.ffn_hidden_size=256", "model.num_attention_heads=4",
    "model.gradient_accumulation_fusion=false", "model.persist_layer_norm=false", "model.bias_activation_fusion=false",
    "model.bias_dropout_fusion=false", "model.masked_softmax_fusion=false", "model.apply_rope_fusion=false",
    "model.cross_entropy_loss_fusion=false", "model.bf16=false", "mixed_precision=null", "optimizer.bf16=false",
    "optimizer.use_distributed_optimizer=false", "dist.distributed_backend=gloo", f"train.train_iters={ITERATIONS}",
    "train.global_batch_size=2", "train.micro_batch_size=1", "dataset.seq_length=128", "dataset.num_workers=0",
    "tokenizer.vocab_size=1024", "validation.eval_interval=null", "validation.eval_iters=0", "logger.log_interval=1",
    f"scheduler.lr_decay_iters={ITERATIONS}", "scheduler.lr_warmup_iters=1", "checkpoint.save=null",
    "checkpoint.save_interval=null",
]


def console_losses(output: str) -> dict[int, float]:
    return {int(step): float(value) for step, value in _CONSOLE_LOSS.findall(output)}


# -- before anything starts --------------------------------------------------------------------------------------


def test_the_experiments_fields_become_run_recipes_overrides():
    schema = schema_for("megatron_bridge")
    params = {"recipe": "r", "wandb_tags": ["a"], "train": {"train_iters": 4}, "mixed_precision": None,
              "logger": {"mlflow_tags": {"team": "bridge"}, "tensorboard_dir": "/tmp/tb"},
              "optimizer": {"lr": 3e-4, "bf16": False}}
    assert overrides(params, schema) == [
        "train.train_iters=4", "mixed_precision=null", 'logger.mlflow_tags={team:"bridge"}',
        'logger.tensorboard_dir="/tmp/tb"', "optimizer.lr=0.0003", "optimizer.bf16=false"]


@pytest.mark.parametrize("override, problem", [
    ("modules.pre_trainer.overrides.model.num_layerz=2", "did you mean model.num_layers?"),
    ("modules.pre_trainer.overrides.train.train_iters=four", "train.train_iters = 'four': expected int or null"),
    ("modules.pre_trainer.overrides.primus_loss_spike_mads=-1", "primus_loss_spike_mads = '-1': expected float >= 0"),
    ("modules.pre_trainer.overrides.logger.comet_api_key=abc123", "export COMET_API_KEY instead"),
    ("modules.pre_trainer.overrides.recipe=", "recipe: missing; name a recipe of megatron.bridge.recipes"),
])
def test_a_bad_key_or_value_is_refused_before_the_job_starts(override, problem, capsys):
    """Checked by the launching environment against Bridge's own annotations (the generated table): no Bridge."""
    assert main(["train", "--config", str(CONFIG), "--dry-run", override]) == 2
    assert problem in capsys.readouterr().err


@pytest.mark.slow
def test_a_field_the_recipes_config_lacks_is_refused_before_training(tmp_path):
    """The table lists every model provider's fields; the recipe's own (a GPT provider) has no VLM freezing: Bridge's
    override parser refuses it, and Primus says which key to fix, before a model is built."""
    this_primus = this_primus_folder(tmp_path)
    env = with_this_primus(this_primus, {"PRIMUS_CONFIG": str(CONFIG), "PYTHONWARNINGS": "ignore",
                                         "PRIMUS_CONFIG_OVERRIDES": json.dumps(
                                             ["modules.pre_trainer.overrides.model.freeze_language_model=true"])})
    process = start([str(BRIDGE_PYTHON), "-m", "primus.backends.megatron_bridge"], tmp_path, tmp_path / "run.log", env)
    code = wait_or_kill(process, TIMEOUT_S)
    output = (tmp_path / "run.log").read_text()
    assert code == 1, output[-3000:]
    assert "primus: " in output and "recipe vanilla_gpt_pretrain_config" in output
    assert "freeze_language_model" in output and "fix or remove the key" in output
    assert "iteration" not in output


# -- primus train, two processes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trained:
    finished: FinishedRun
    run_dir: Path


@pytest.fixture(scope="module")
def trained(tmp_path_factory, mlflow_server) -> Trained:
    workdir = tmp_path_factory.mktemp("bridge-primus-train")
    this_primus = this_primus_folder(tmp_path_factory.mktemp("primus"))
    primus = shutil.which("primus") or str(Path(sys.executable).with_name("primus"))
    command = [primus, "train", "--config", str(CONFIG), "--nproc-per-node", "2",
               f"train.train_iters={ITERATIONS}", f"scheduler.lr_decay_iters={ITERATIONS}",
               "validation.eval_interval=null", "validation.eval_iters=0",
               "logger.mlflow_description=two ranks, one run", "logger.mlflow_tags={team: bridge}",
               "logger.wandb_project=bridge-train", "logger.wandb_exp_name=tiny-cpu"]  # stragglers by default
    env = with_this_primus(this_primus, {"PRIMUS_WORKSPACE": str(workdir / "output"), "PRIMUS_EXP_NAME": "bridge-train",
                                         "MLFLOW_TRACKING_URI": mlflow_server.uri, "PYTHONWARNINGS": "ignore",
                                         "WANDB_MODE": "offline",
                                         **slow_rank_env(workdir / "site", FORWARD_STEP, SLOW_RANK, SLOW_S)})
    started = time.monotonic()
    process = start(command, workdir, workdir / "run.log", env)
    try:
        code = wait_or_kill(process, TIMEOUT_S)
    finally:
        kill_torchrun(process)
    finished = FinishedRun(code, workdir / "run.log", time.monotonic() - started)
    assert code == 0, finished.explain()
    [run_dir] = (workdir / "output" / "bridge-train").iterdir()
    return Trained(finished, run_dir)


@pytest.mark.slow
def test_primus_train_trains_the_recipe_with_the_experiments_overrides(trained):
    assert sorted(console_losses(trained.finished.output)) == STEPS  # train.train_iters from the command line


@pytest.mark.slow
def test_every_step_reaches_tensorboard_in_the_run_directory_from_the_hub(trained):
    """Under primus train Bridge's TensorBoard folder is the run directory's (the recipe's own default is under the
    working directory); the file is the delivery process's, not Bridge's writer's."""
    [events] = (trained.run_dir / "tensorboard").glob("events.out.tfevents.*")
    state = json.loads((trained.run_dir / "run.json").read_text())
    assert int(events.name.split(".")[-2]) == state["run"]["delivery_pid"]
    scalars = read_tb_scalars(trained.run_dir / "tensorboard")
    console = console_losses(trained.finished.output)
    assert [step for step, _ in scalars["lm loss"]] == STEPS
    assert [value for _, value in scalars["lm loss"]] == pytest.approx([console[s] for s in STEPS], rel=1e-6)


@pytest.mark.slow
def test_the_mlflow_run_has_bridges_names_labels_and_config(trained, mlflow_client):
    experiment = mlflow_client.get_experiment_by_name("bridge-train")  # logger.mlflow_experiment: ${PRIMUS_EXP_NAME}
    [run] = mlflow_client.search_runs([experiment.experiment_id])  # one run for two ranks
    assert (run.info.status, run.info.run_name) == ("FINISHED", "tiny-cpu")  # logger.mlflow_run_name
    expected = {"team": "bridge", "mlflow.note.content": "two ranks, one run", "primus.backend": "megatron_bridge",
                "primus.world_size": "2", "primus.parallel.dp": "2"}
    assert {key: run.data.tags.get(key) for key in expected} == expected
    params = run.data.params
    assert (params["train.train_iters"], params["model.num_layers"], params["model.hidden_size"]) == ("4", "2", "64")
    assert [step for step, _ in mlflow_history(mlflow_client, run.info.run_id, "lm loss")] == STEPS


def assert_wandb_has_every_step_once(wandb_dir: Path, run_dir: Path, output: str) -> None:
    """One offline W&B run, the hub's (Bridge's own wandb.init would make a second), every step once with the
    console's loss."""
    assert len(wandb_files(wandb_dir)) == 1
    assert wandb_run_ids(wandb_dir) == {json.loads((run_dir / "run.json").read_text())["wandb"]["id"]}
    losses = [(row["_step"], row["lm loss"]) for row in read_wandb_history(wandb_dir) if "lm loss" in row]
    console = console_losses(output)
    assert [step for step, _ in losses] == STEPS
    assert [value for _, value in losses] == pytest.approx([console[s] for s in STEPS], rel=1e-6)


@pytest.mark.slow
def test_every_step_reaches_wandb_once_from_the_writer_rank(trained):
    """Two ranks, one W&B run, offline in the run directory (the plan's default for logger.wandb_save_dir)."""
    assert_wandb_has_every_step_once(trained.run_dir / "wandb", trained.run_dir, trained.finished.output)


@pytest.mark.slow
def test_primus_stragglers_names_the_slowed_rank(trained, mlflow_client):
    """primus_stragglers (on by default with two ranks): every rank's busy time gathered at each log step through
    the job's store; the writer rank logs straggler/* one log step later, from the third (the first starts the
    clock), and names the slow rank on the console."""
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("bridge-train").experiment_id])
    logged = STEPS[2:]
    figures = {name: dict(mlflow_history(mlflow_client, run.info.run_id, name))
               for name in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX, straggler.SLOWEST_RANK,
                            straggler.SLOWEST_OVER_MEDIAN, straggler.MISSING_RANKS)}
    assert all(sorted(points) == logged for points in figures.values()), figures
    named = [step for step in logged if figures[straggler.SLOWEST_RANK][step] == SLOW_RANK]
    assert len(named) > len(logged) / 2, figures[straggler.SLOWEST_RANK]
    low, median, high = (figures[n] for n in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX))
    assert all(low[s] <= median[s] <= high[s] for s in logged)
    assert all(figures[straggler.MISSING_RANKS][s] == 0 for s in logged)
    assert f"[primus] slowest rank {SLOW_RANK} (" in trained.finished.output, trained.finished.explain()


# -- run_recipe.py's calls under primus-run torchrun -------------------------------------------------------------


@pytest.mark.slow
def test_run_recipes_calls_under_primus_run_are_tracked(tmp_path, mlflow_server, mlflow_client):
    this_primus = this_primus_folder(tmp_path)
    primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
    command = [primus_run, str(BRIDGE_PYTHON), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
               str(RUN_RECIPE), "--recipe", "vanilla_gpt_pretrain_config", "--dataset", "mock", *TINY_OVERRIDES,
               f"logger.tensorboard_dir={tmp_path / 'tb'}", "logger.mlflow_experiment=bridge-run-recipe",
               "logger.mlflow_run_name=tiny", f"logger.mlflow_tracking_uri={mlflow_server.uri}",
               "logger.wandb_project=bridge-run-recipe", "logger.wandb_exp_name=tiny",
               f"logger.wandb_save_dir={tmp_path / 'wandb'}"]
    env = with_this_primus(this_primus, {"PRIMUS_OUTPUT_ROOT": str(tmp_path / "primus"), "PYTHONWARNINGS": "ignore",
                                         "WANDB_MODE": "offline"})
    process = start(command, tmp_path, tmp_path / "run.log", env)
    try:
        code = wait_or_kill(process, TIMEOUT_S)
    finally:
        kill_torchrun(process)
    output = (tmp_path / "run.log").read_text()
    assert code == 0, output[-3000:]
    console = console_losses(output)
    assert sorted(console) == STEPS
    [events] = (tmp_path / "tb").glob("events.out.tfevents.*")  # one file: the hub's, Bridge's writer wrote none
    scalars = read_tb_scalars(tmp_path / "tb")
    assert [value for _, value in scalars["lm loss"]] == pytest.approx([console[s] for s in STEPS], rel=1e-6)
    experiment = mlflow_client.get_experiment_by_name("bridge-run-recipe")
    [run] = mlflow_client.search_runs([experiment.experiment_id])
    assert (run.info.status, run.info.run_name) == ("FINISHED", "tiny")
    assert run.data.params["model.num_layers"] == "2"  # the KEY=VALUE overrides reached Bridge's config
    assert [step for step, _ in mlflow_history(mlflow_client, run.info.run_id, "lm loss")] == STEPS
    [run_dir] = (tmp_path / "primus").glob("*/run.json")
    assert_wandb_has_every_step_once(tmp_path / "wandb", run_dir.parent, output)
