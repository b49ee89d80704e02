"""What a Megatron-Bridge run tracks, decided from Bridge's own logger settings (``ConfigContainer.logger``): each
tracker on by Bridge's own rule and named as Bridge names it, the run directory by the rule every launcher shares."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from primus.backends.megatron_bridge.session import BridgeTracking, flat_params
from primus.backends.megatron_bridge.tracking_plan import plan_tracking
from primus.tracking.health.stacks import release_stacks, stacks_file
from primus.tracking.plan import TrackingPlanError


def bridge_config(tmp_path: Path, save: str | None = None, **logger) -> SimpleNamespace:
    """The fields of Bridge's ConfigContainer the plan reads, with LoggerConfig's defaults."""
    settings = dict(tensorboard_dir=None, tensorboard_queue_size=1000, wandb_project=None, wandb_entity=None,
                    wandb_exp_name=None, wandb_save_dir=None, mlflow_experiment=None, mlflow_run_name=None,
                    mlflow_tracking_uri=None, mlflow_tags=None, mlflow_description=None, comet_project=None,
                    comet_workspace=None, comet_experiment_name=None, comet_tags=None, comet_api_key=None)
    settings.update(logger)
    return SimpleNamespace(logger=SimpleNamespace(**settings), checkpoint=SimpleNamespace(save=save))


def environ(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"PRIMUS_OUTPUT_ROOT": str(tmp_path / "out"), "WANDB_MODE": "offline", **more}


def test_no_bridge_tracker_set_leaves_bridge_alone(tmp_path):
    assert plan_tracking(bridge_config(tmp_path), rank=0, environ=environ(tmp_path)).config is None


def test_a_pushgateway_alone_starts_tracking(tmp_path):
    config = plan_tracking(bridge_config(tmp_path), rank=0,
                           environ=environ(tmp_path, PRIMUS_PROMETHEUS_PUSHGATEWAY="http://gw.example:9091")).config
    assert config.prometheus.pushgateway == "http://gw.example:9091" and config.tensorboard is None


def test_bridges_tensorboard_folder_is_where_the_hub_writes(tmp_path):
    config = plan_tracking(bridge_config(tmp_path, tensorboard_dir=str(tmp_path / "tb"), tensorboard_queue_size=7),
                           rank=0, environ=environ(tmp_path)).config
    assert (config.tensorboard.log_dir, config.tensorboard.queue_size) == (tmp_path / "tb", 7)
    assert config.wandb is None and config.mlflow is None
    assert config.run_dir.parent == tmp_path / "out"  # a fresh run: a timestamped folder under PRIMUS_OUTPUT_ROOT


def test_bridges_mlflow_settings_name_the_experiment_run_and_server(tmp_path):
    config = plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_run_name="tiny",
                                         mlflow_tracking_uri="http://127.0.0.1:5999"),
                           rank=0, environ=environ(tmp_path, MLFLOW_TRACKING_URI="http://127.0.0.1:1")).config
    assert (config.mlflow.experiment_name, config.mlflow.run_name) == ("exp", "tiny")
    assert config.mlflow.tracking_uri == "http://127.0.0.1:5999"  # Bridge's own setting over the environment's
    assert config.tensorboard is None


def test_bridges_wandb_settings_and_the_checkpointed_run_directory(tmp_path):
    save = tmp_path / "ckpt"
    config = plan_tracking(bridge_config(tmp_path, save=str(save), wandb_project="proj", wandb_entity="team",
                                         wandb_exp_name="tiny"), rank=0, environ=environ(tmp_path)).config
    assert (config.wandb.project, config.wandb.entity, config.wandb.name) == ("proj", "team", "tiny")
    assert config.run_dir == save / "primus"  # a job restarted from its checkpoint resumes the same runs
    assert config.wandb.save_dir == save / "primus" / "wandb"
    assert config.run_name == "tiny"


def test_primus_run_dir_wins_and_a_bad_tracking_uri_is_refused_before_training(tmp_path):
    config = plan_tracking(bridge_config(tmp_path, tensorboard_dir=str(tmp_path / "tb")), rank=0,
                           environ=environ(tmp_path, PRIMUS_RUN_DIR=str(tmp_path / "mine"))).config
    assert config.run_dir == tmp_path / "mine"
    with pytest.raises(TrackingPlanError, match="mlflow_tracking_uri|MLFLOW_TRACKING_URI"):
        plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_tracking_uri="nope://x"), rank=0,
                      environ=environ(tmp_path))


def test_comet_without_its_client_is_refused_before_training_naming_both_fixes(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", _without("comet_ml"))
    with pytest.raises(TrackingPlanError) as refused:
        plan_tracking(bridge_config(tmp_path, comet_project="c"), rank=0, environ=environ(tmp_path))
    assert "logger.comet_project='c'" in str(refused.value)  # the option, then both fixes
    assert "pip install comet_ml" in str(refused.value) and "unset logger.comet_project" in str(refused.value)


def test_bridges_comet_settings_become_the_comet_sinks(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", _with("comet_ml"))
    logger = dict(comet_project="c", comet_workspace="w", comet_experiment_name="e", comet_tags=["t1", "t2"])
    config = plan_tracking(bridge_config(tmp_path, **logger), rank=0, environ=environ(tmp_path)).config
    assert (config.comet.project, config.comet.workspace, config.comet.name, config.comet.tags) == (
        "c", "w", "e", ("t1", "t2"))
    assert config.comet.offline is False and config.comet.offline_dir == config.run_dir / "comet"
    assert config.tensorboard is None and config.wandb is None and config.mlflow is None
    offline = plan_tracking(bridge_config(tmp_path, comet_project="c"), rank=0, environ=environ(
        tmp_path, COMET_MODE="OFFLINE", COMET_OFFLINE_DIRECTORY=str(tmp_path / "archives"))).config
    assert (offline.comet.offline, offline.comet.offline_dir) == (True, tmp_path / "archives")
    assert offline.comet.name == offline.run_name  # Bridge requires a name; Primus's run name stands in
    keyed = plan_tracking(bridge_config(tmp_path, comet_project="c", comet_api_key="s3cr3t-k3y"), rank=0,
                          environ=environ(tmp_path))
    [warning] = [w for w in keyed.notices.warnings if "comet_api_key" in w]
    assert "export COMET_API_KEY" in warning and "s3cr3t" not in warning + repr(keyed.config)


def _without(name: str):
    find_spec = importlib.util.find_spec
    return lambda wanted, *args: None if wanted == name else find_spec(wanted, *args)


def _with(name: str):
    find_spec = importlib.util.find_spec
    return lambda wanted, *args: object() if wanted == name else find_spec(wanted, *args)


def test_bridges_config_becomes_flat_params_trackers_can_store():
    assert flat_params({"train": {"train_iters": 4, "seq": [1, 2]}, "name": None, "dtype": float}) == {
        "train.train_iters": 4, "train.seq": "[1, 2]", "name": None, "dtype": "<class 'float'>"}


def test_bridges_mlflow_tags_are_checked_as_every_backends(tmp_path):
    plan = plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_tags={"team": "bridge", "n": 2}),
                         rank=0, environ=environ(tmp_path))
    assert dict(plan.user_tags) == {"team": "bridge", "n": "2"}
    with pytest.raises(TrackingPlanError, match="key 'primus.backend' is in the primus"):
        plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_tags={"primus.backend": "x"}), rank=0,
                      environ=environ(tmp_path))


def test_bridges_mlflow_description_is_the_run_description(tmp_path):
    plan = plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_description="a tiny run"), rank=0,
                         environ=environ(tmp_path))
    assert plan.user_tags["mlflow.note.content"] == "a tiny run"


def test_primus_options_bridge_has_no_key_for_come_from_the_experiment(tmp_path):
    """`primus train` (and `primus-run --config`) name the experiment in PRIMUS_CONFIG: every rank reads the Primus
    options of its Megatron-Bridge module from it, as the other backends do."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("modules:\n  m:\n    framework: megatron_bridge\n    config: pre_trainer.yaml\n"
                          "    overrides: {recipe: vanilla_gpt_pretrain_config, wandb_tags: [a, b], "
                          "wandb_notes: from the experiment, primus_exit_deadline: 7}\n")
    config = plan_tracking(bridge_config(tmp_path, wandb_project="proj"), rank=0,
                           environ=environ(tmp_path, PRIMUS_CONFIG=str(experiment))).config
    assert (config.wandb.tags, config.wandb.notes, config.exit_deadline_s) == (("a", "b"), "from the experiment", 7)
    # the perf set and the MFU peak, which Bridge's logger has no key for
    experiment.write_text(experiment.read_text().replace("primus_exit_deadline: 7", "primus_exit_deadline: 7, "
                                                         "mlflow_upload_performance_metrics: true, peak_tflops: 99.5"))
    plan = plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_run_name="r"), rank=0,
                         environ=environ(tmp_path, PRIMUS_CONFIG=str(experiment)))
    assert (plan.perf_metrics, plan.peak_tflops) == (True, 99.5)
    # none given: the catalogue's defaults
    assert plan_tracking(bridge_config(tmp_path, wandb_project="proj"), rank=0,
                         environ=environ(tmp_path)).config.exit_deadline_s == 30.0


def test_a_bad_bridge_key_is_named_as_the_user_wrote_it(tmp_path):
    with pytest.raises(TrackingPlanError, match=r"mlflow_tags=.*\(logger\.mlflow_tags\) is invalid"):
        plan_tracking(bridge_config(tmp_path, mlflow_experiment="exp", mlflow_tags={"primus.x": "y"}), rank=0,
                      environ=environ(tmp_path))


def test_every_rank_plans_before_training_and_one_that_does_not_write_keeps_its_stacks_in_the_run(tmp_path,
                                                                                                  monkeypatch):
    """What the plan patch calls on each rank before Bridge's setup: the last rank writes; rank 0 of two plans the same
    run, fails on a bad setting as the writer does, and has its stacks saved in the run's folder at a stall (the
    file goes at a clean exit, so a training cannot show it afterwards)."""
    monkeypatch.setenv("PRIMUS_RUN_DIR", str(tmp_path / "run"))
    config = bridge_config(tmp_path, tensorboard_dir=str(tmp_path / "tb"))
    stacks = stacks_file(tmp_path / "run", socket.gethostname(), os.getpid())
    rank0 = BridgeTracking()
    rank0.plan_for(config, 0, 2)
    assert rank0.plan.config.run_dir == tmp_path / "run" and stacks.is_file()
    release_stacks(stacks)
    writer = BridgeTracking()
    writer.plan_for(config, 1, 2)
    assert writer.plan.config.run_dir == tmp_path / "run" and not stacks.exists()  # its delivery process's instead
    with pytest.raises(TrackingPlanError, match="logger.mlflow_tags"):
        BridgeTracking().plan_for(bridge_config(tmp_path, mlflow_experiment="e", mlflow_tags={"primus.x": "y"}), 0, 2)
