"""What a MaxText run tracks, decided from upstream's config and Primus's options before training: where
each tracker writes, which run directory holds the journal and run ids, and the settings refused."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from primus.backends.maxtext.primus_options import PrimusOptions
from primus.backends.maxtext.tracking_plan import plan_tracking
from primus.tracking.plan import TrackingPlanError

OFFLINE = {"WANDB_MODE": "offline"}


def maxtext_config(tmp_path: Path, **changes) -> SimpleNamespace:
    """The keys the plan reads, with upstream's derivations (tensorboard_dir = <base>/<run>/tensorboard/)."""
    settings = dict(run_name="tiny", base_output_directory=str(tmp_path), log_period=100, enable_tensorboard=True,
                    enable_wandb=False, wandb_project_name="maxtext", wandb_run_name="")
    settings.update(changes)
    settings.setdefault("tensorboard_dir", f"{settings['base_output_directory']}/{settings['run_name']}/tensorboard/")
    return SimpleNamespace(**settings)


def test_every_tracker_off_leaves_upstream_alone(tmp_path):
    plan = plan_tracking(maxtext_config(tmp_path, enable_tensorboard=False),
                         PrimusOptions(mlflow_upload_performance_metrics=True), environ={})
    assert plan.config is None and not plan.perf_metrics
    assert plan.notices.infos == ["mlflow_upload_performance_metrics ignored: MLflow is off (enable_mlflow=false)"]


def test_a_plugin_tracker_alone_starts_tracking(tmp_path, sink_plugin):
    sink_plugin()
    plan = plan_tracking(maxtext_config(tmp_path, enable_tensorboard=False), PrimusOptions(),
                         environ={"PRIMUS_SINKS": "demo"})
    assert plan.config.plugin_sinks == ("demo",) and plan.config.tensorboard is None


def test_an_opentelemetry_collector_alone_starts_tracking(tmp_path):
    plan = plan_tracking(maxtext_config(tmp_path, enable_tensorboard=False), PrimusOptions(),
                         environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert plan.config.otlp.logs_endpoint == "http://collector:4318/v1/logs" and plan.config.tensorboard is None


def test_a_pushgateway_alone_starts_tracking(tmp_path):
    off = maxtext_config(tmp_path, enable_tensorboard=False)
    plan = plan_tracking(off, PrimusOptions(primus_prometheus_pushgateway="http://gw.example:9091"), environ={})
    assert plan.config.prometheus.pushgateway == "http://gw.example:9091" and plan.config.tensorboard is None
    from_env = plan_tracking(off, PrimusOptions(), environ={"PRIMUS_PROMETHEUS_PUSHGATEWAY": "http://gw:1"})
    assert from_env.config.prometheus.pushgateway == "http://gw:1"


def test_trackers_write_where_upstream_does_and_the_run_lives_in_maxtexts_run_folder(tmp_path):
    options = PrimusOptions(enable_mlflow=True, mlflow_experiment_name="exp", mlflow_upload_performance_metrics=True,
                            primus_journal_retention="delivered")
    plan = plan_tracking(maxtext_config(tmp_path, enable_wandb=True, log_period=5), options, environ=OFFLINE)
    cfg = plan.config
    assert cfg.run_dir == tmp_path / "tiny" / "primus"  # a restart under the same run_name resumes its runs
    assert cfg.tensorboard.log_dir == tmp_path / "tiny" / "tensorboard" / "tiny"  # upstream's writer's folder
    assert cfg.tensorboard.queue_size == 10
    assert (cfg.wandb.project, cfg.wandb.name, cfg.wandb.mode) == ("maxtext", "tiny", "offline")
    assert (cfg.mlflow.experiment_name, cfg.mlflow.run_name) == ("exp", "tiny")
    assert cfg.journal_retention == "delivered"
    assert cfg.exit_deadline_s == 30.0
    assert (plan.perf_metrics, plan.notices.warnings) == (True, [])


def test_the_exit_deadline_reaches_the_run(tmp_path):
    plan = plan_tracking(maxtext_config(tmp_path), PrimusOptions(primus_exit_deadline=180.0), environ={})
    assert plan.config.exit_deadline_s == 180.0


def test_primus_train_run_directory_wins_and_missing_wandb_credentials_warn(tmp_path):
    plan = plan_tracking(maxtext_config(tmp_path, enable_wandb=True, wandb_run_name="w"), PrimusOptions(),
                         explicit_run_dir=tmp_path / "run", environ={"NETRC": str(tmp_path / "none")})
    assert plan.config.run_dir == tmp_path / "run" and plan.config.wandb.name == "w"
    assert "WANDB_API_KEY" in plan.notices.warnings[0] and "WANDB_MODE=offline" in plan.notices.warnings[0]


@pytest.mark.parametrize("changes, options, message", [
    ({"log_period": 0}, PrimusOptions(), "log_period=0 is invalid: expected int >= 1 (Train steps between TensorBoard "
                                        "flushes"),
    ({"base_output_directory": "gs://bucket/out"}, PrimusOptions(),
     "base_output_directory='gs://bucket/out' is remote, and Primus keeps each run's journal"),
    ({"tensorboard_dir": "gs://bucket/tb/"}, PrimusOptions(), "enable_tensorboard=true writes to "
                                                               "tensorboard_dir='gs://bucket/tb/'"),
    ({"enable_tensorboard": False}, PrimusOptions(enable_mlflow=True, mlflow_experiment_name="exp"),
     "mlflow.experiment_name='exp' is not valid: Databricks experiment names are"),
])
def test_settings_that_cannot_work_are_refused_before_training(tmp_path, changes, options, message):
    environ = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "https://x", "DATABRICKS_TOKEN": "t",
               "DATABRICKS_CONFIG_FILE": str(tmp_path / "none")}
    with pytest.raises(TrackingPlanError, match=r"^invalid Primus settings:\n  - " + re.escape(message)):
        plan_tracking(maxtext_config(tmp_path, **changes), options, environ=environ)


def test_the_users_tags_from_maxtext_keys_and_a_bad_list_refused(tmp_path):
    options = PrimusOptions(enable_mlflow=True, mlflow_experiment_name="exp", mlflow_tags="team=jax",
                            mlflow_description="tiny", wandb_tags=["cpu"])
    plan = plan_tracking(maxtext_config(tmp_path, enable_wandb=True), options, environ=OFFLINE)
    assert dict(plan.user_tags) == {"team": "jax", "mlflow.note.content": "tiny"}
    assert plan.config.wandb.tags == ("cpu",)
    with pytest.raises(TrackingPlanError, match=re.escape("wandb_tags={'a': 1} is invalid: give a list")):
        plan_tracking(maxtext_config(tmp_path), PrimusOptions(wandb_tags={"a": 1}), environ=OFFLINE)
