"""Tracker settings in the environment, judged before training as the tracker clients would judge them: an
empty variable is unset where the client reads it so, refused where the client refuses it (W&B's own settings
class decides for every WANDB_* variable), with the variable named and the fix."""

from __future__ import annotations

import pytest

from primus.tracking import MlflowConfig, TrackingConfig, TrackingConfigError, WandbConfig, start_run
from primus.tracking.settings.environment import wandb_environment_problems

EMPTY_REFUSED = ("WANDB_MODE", "WANDB_BASE_URL", "WANDB_INIT_TIMEOUT", "WANDB_RESUME", "WANDB_CONSOLE")
EMPTY_IS_UNSET = ("WANDB_PROJECT", "WANDB_ENTITY", "WANDB_TEAM", "WANDB_RUN_NAME", "WANDB_DIR", "WANDB_API_KEY")


@pytest.mark.parametrize("name", EMPTY_REFUSED)
def test_an_empty_variable_w_and_b_refuses_stops_the_run_before_it_starts(name, tmp_path, monkeypatch):
    monkeypatch.setenv(name, "")
    with pytest.raises(TrackingConfigError) as error:
        start_run(TrackingConfig(run_dir=tmp_path / "run", wandb=WandbConfig(mode="offline")))
    message = str(error.value)
    assert f"{name}='' is not valid" in message and f"it is set but empty, which W&B refuses: unset it " \
           f"(unset {name}) or give it a value" in message
    assert not (tmp_path / "run").exists()


def test_empty_variables_w_and_b_reads_as_unset_are_unset(tmp_path, monkeypatch):
    for name in EMPTY_IS_UNSET:
        monkeypatch.setenv(name, "")
    assert wandb_environment_problems(dict.fromkeys(EMPTY_IS_UNSET, "")) == []
    resolved = TrackingConfig(run_dir=tmp_path / "run", wandb=WandbConfig(mode="offline")).resolve()
    assert (resolved.wandb.project, resolved.wandb.entity, resolved.wandb.name) == (None, None, "run")
    assert resolved.wandb.save_dir == tmp_path / "run"


def test_an_empty_mlflow_tracking_uri_is_unset_as_mlflow_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")
    monkeypatch.setenv("MLFLOW_REGISTRY_URI", "")
    resolved = TrackingConfig(run_dir=tmp_path / "run", mlflow=MlflowConfig()).resolve()
    assert resolved.mlflow.tracking_uri == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert resolved.mlflow.registry_uri is None


def test_empty_databricks_variables_are_named_as_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABRICKS_HOST", "")
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(TrackingConfigError, match=r"needs DATABRICKS_HOST \(set but empty\) and DATABRICKS_TOKEN in"):
        TrackingConfig(run_dir=tmp_path / "run", mlflow=MlflowConfig(tracking_uri="databricks",
                                                                     experiment_name="/Users/me/x")).resolve()


def test_a_secret_value_is_never_echoed():
    [problem] = wandb_environment_problems({"WANDB_BASE_URL": "https://u:s3cr3tpass99@host:bad"})
    assert "s3cr3tpass99" not in problem and problem.startswith("WANDB_BASE_URL=")
