from dataclasses import replace
from pathlib import Path

import pytest

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, TrackingConfigError, WandbConfig


def resolve(env=None, **kw):
    return TrackingConfig(run_dir=Path("/tmp/primus-cfg/run-7"), **kw).resolve(env or {})


def test_wandb_settings_come_from_the_environment_when_unset():
    env = {"WANDB_PROJECT": "proj", "WANDB_TEAM": "team", "WANDB_RUN_NAME": "nm", "WANDB_MODE": "offline"}
    cfg = resolve(env, wandb=WandbConfig())
    assert (cfg.wandb.project, cfg.wandb.entity, cfg.wandb.name, cfg.wandb.mode) == ("proj", "team", "nm", "offline")
    assert cfg.wandb.save_dir == Path("/tmp/primus-cfg/run-7")
    explicit = resolve(env, wandb=WandbConfig(project="mine", entity="me"))
    assert (explicit.wandb.project, explicit.wandb.entity) == ("mine", "me")


def test_mlflow_uri_from_env_else_a_local_store_next_to_the_run():
    assert resolve({"MLFLOW_TRACKING_URI": "http://h:5000"}, mlflow=MlflowConfig()).mlflow.tracking_uri == "http://h:5000"
    cfg = resolve(mlflow=MlflowConfig())
    assert cfg.mlflow.tracking_uri == "sqlite:////tmp/primus-cfg/mlflow.db"
    assert (cfg.mlflow.experiment_name, cfg.mlflow.run_name) == ("primus", "run-7")


def test_mlflow_experiment_from_the_run_else_the_environment_else_primus():
    env = {"MLFLOW_EXPERIMENT_NAME": "from-env"}
    assert resolve(env, mlflow=MlflowConfig()).mlflow.experiment_name == "from-env"
    assert resolve(env, experiment_name="job", mlflow=MlflowConfig()).mlflow.experiment_name == "job"
    assert resolve(env, mlflow=MlflowConfig(experiment_name="mine")).mlflow.experiment_name == "mine"
    assert resolve(env).experiment_name == "from-env"  # what plugin trackers are told, MLflow on or off


@pytest.mark.parametrize("kw,key,fix", [
    (dict(wandb=WandbConfig(mode="onlne")), "wandb.mode (or WANDB_MODE)='onlne'", "online, offline"),
    (dict(exit_deadline_s=-1), "exit_deadline_s=-1", "positive number"),
    (dict(exit_deadline_s=float("nan")), "exit_deadline_s=nan", "positive number"),
    (dict(journal_segment_bytes=0), "journal_segment_bytes=0", "positive integer"),
    (dict(journal_retention="deliverd"), "journal_retention='deliverd'", "keep, delivered"),
    (dict(tensorboard=TensorBoardConfig(Path("/tmp/tb"), queue_size=0)), "tensorboard.queue_size=0", "positive"),
    (dict(wandb=WandbConfig(init_timeout_s=0)), "wandb.init_timeout_s=0", "positive number"),
    (dict(delivery="subprocess"), "delivery='subprocess'", "process, thread"),
    (dict(wandb=WandbConfig(fork_from="abc")), "wandb.fork_from='abc'", "'<run id>?_step=<step>'"),
    (dict(wandb=WandbConfig(resume_from="abc?_step=x")), "wandb.resume_from='abc?_step=x'", "?_step=<step>"),
    (dict(wandb=WandbConfig(resume_from="a?_step=1", fork_from="b?_step=2")), "wandb.resume_from and wandb.fork_from",
     "set one of them"),
    (dict(wandb=WandbConfig(run_id="a", fork_from="a?_step=2")), "wandb.fork_from='a?_step=2'", "new run id"),
    (dict(wandb=WandbConfig(run_id="a", resume_from="b?_step=2")), "wandb.resume_from='b?_step=2'",
     "rewind the run of wandb.run_id"),
])
def test_bad_values_name_the_key_the_value_and_the_fix(kw, key, fix):
    with pytest.raises(TrackingConfigError) as e:
        resolve(**kw)
    assert key in str(e.value) and fix in str(e.value)


def test_the_experiment_schema_offers_the_journal_retentions_the_tracking_core_takes():
    from primus.config.schemas.tracking import JOURNAL_RETENTIONS as SCHEMA_CHOICES
    from primus.tracking.settings.config import JOURNAL_RETENTIONS

    assert SCHEMA_CHOICES == JOURNAL_RETENTIONS and resolve().journal_retention == "keep"


def test_delivery_defaults_to_a_process_and_the_environment_can_choose_threads():
    assert resolve().delivery == "process"
    assert resolve({"PRIMUS_TRACKING_DELIVERY": "thread"}).delivery == "thread"
    assert resolve({"PRIMUS_TRACKING_DELIVERY": "thread"}, delivery="process").delivery == "process"
    with pytest.raises(TrackingConfigError, match="PRIMUS_TRACKING_DELIVERY='threads'"):
        resolve({"PRIMUS_TRACKING_DELIVERY": "threads"})


def test_databricks_needs_host_and_token_and_a_workspace_experiment_path(tmp_path):
    env = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_CONFIG_FILE": str(tmp_path / "none")}
    with pytest.raises(TrackingConfigError, match="DATABRICKS_HOST and DATABRICKS_TOKEN"):
        resolve(env, mlflow=MlflowConfig(experiment_name="/Users/me/x"))
    env.update(DATABRICKS_HOST="https://x.cloud.databricks.com", DATABRICKS_TOKEN="dapi" + "0" * 32)
    with pytest.raises(TrackingConfigError, match="'/Users/<you>/exp'"):
        resolve(env, mlflow=MlflowConfig(experiment_name="exp"))
    assert resolve(env, mlflow=MlflowConfig(experiment_name="/Users/me/exp")).mlflow.tracking_uri == "databricks"


def test_a_secret_in_a_bad_value_is_not_echoed():
    with pytest.raises(TrackingConfigError) as e:
        resolve({"WANDB_MODE": "https://u:hunter2hunter2@x"}, wandb=WandbConfig())
    assert "hunter2" not in str(e.value)


def test_a_config_is_resolved_once_from_the_backends_plan_to_the_run(tmp_path, primus_caplog, monkeypatch):
    """A backend resolves its plan's config before training (Notices.resolved); start_run takes it as it is: the
    W&B settings check runs once (a subprocess where wandb is not imported yet) and a warning is said once."""
    from primus.tracking import start_run
    from primus.tracking.plan import Notices
    from primus.tracking.settings import environment

    checks = []
    run_check = environment.subprocess.run
    monkeypatch.setattr(environment.subprocess, "run",
                        lambda cmd, *a, **kw: checks.append(cmd[-1]) or run_check(cmd, *a, **kw))
    monkeypatch.delitem(environment.sys.modules, "wandb", raising=False)  # else judged here, in this process
    monkeypatch.setenv("WANDB_MODE", "offline")
    config = Notices().resolved(TrackingConfig(run_dir=tmp_path / "run", journal_max_bytes=2000,
                                               wandb=WandbConfig()))
    assert config.resolve() is config
    start_run(replace(config, params={"lr": 0.1})).finish()
    assert checks.count("primus.tracking.settings.wandb_settings_check") == 1
    warnings = [r for r in primus_caplog.records if "journal_max_bytes=2000 is ignored" in r.getMessage()]
    assert len(warnings) == 1
