"""What a TorchTitan run tracks, decided from the metrics settings before training: run directories,
names, the uploads that need MLflow, and the errors and warnings for bad settings."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from primus.backends.torchtitan.metrics_options import primus_config_class
from primus.backends.torchtitan.tracking_plan import plan_tracking
from primus.tracking.plan import TrackingPlanError


@dataclass(kw_only=True, slots=True)
class UpstreamMetrics:  # torchtitan's metrics fields, as its config class has them
    log_freq: int = 10
    enable_tensorboard: bool = False
    enable_wandb: bool = False
    save_tb_folder: str = "tb"
    save_for_all_ranks: bool = False
    disable_color_printing: bool = False


def metrics(**overrides):
    """The metrics config Primus's patch hands the plan: upstream's class with Primus's options."""
    return primus_config_class(UpstreamMetrics)(**overrides)


def plan(tmp_path, checkpoint_dir=None, rank=0, explicit=None, profiling=False, profiler_section="profiler",
         **overrides):
    return plan_tracking(metrics(**overrides), dump_folder=str(tmp_path), checkpoint_dir=checkpoint_dir, rank=rank,
                         explicit_run_dir=explicit, profiling=profiling, profiler_section=profiler_section)


def test_every_tracker_off_leaves_upstream_alone(tmp_path):
    p = plan(tmp_path, mlflow_upload_logs=True)
    assert p.config is None and not p.perf_metrics and p.log_file is None
    assert p.notices.infos == ["metrics.mlflow_upload_logs ignored: MLflow is off (metrics.enable_mlflow: false)"]
    assert not any(tmp_path.iterdir())


def test_a_plugin_tracker_alone_starts_tracking(tmp_path, sink_plugin):
    sink_plugin()  # PRIMUS_SINKS=demo
    p = plan(tmp_path)
    assert p.config.plugin_sinks == ("demo",) and (p.config.tensorboard, p.config.mlflow) == (None, None)


def test_an_opentelemetry_collector_alone_starts_tracking(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    p = plan(tmp_path)
    assert p.config.otlp.metrics_endpoint == "http://collector:4318/v1/metrics"
    assert (p.config.tensorboard, p.config.mlflow, p.config.wandb) == (None, None, None)


def test_a_pushgateway_alone_starts_tracking(tmp_path, monkeypatch):
    p = plan(tmp_path, primus_prometheus_pushgateway="http://gw.example:9091", primus_prometheus_push_interval=5.0)
    assert p.config.prometheus.pushgateway == "http://gw.example:9091" and p.config.prometheus.push_interval_s == 5
    assert (p.config.tensorboard, p.config.mlflow, p.config.wandb) == (None, None, None)
    monkeypatch.setenv("PRIMUS_PROMETHEUS_PUSHGATEWAY", "http://gw.example:9091")
    assert plan(tmp_path).config.prometheus.pushgateway == "http://gw.example:9091"


def test_derived_run_directory_is_upstreams_tensorboard_folder(tmp_path):
    p = plan(tmp_path, enable_tensorboard=True)
    run_dir = p.config.run_dir
    assert run_dir.parent == tmp_path / "tb" and p.config.tensorboard.log_dir == run_dir
    assert p.config.run_name == run_dir.name and p.config.mlflow is None and p.config.wandb is None


def test_checkpointed_job_keeps_its_run_directory_in_the_checkpoint_folder_to_resume(tmp_path):
    p = plan(tmp_path, checkpoint_dir=tmp_path / "checkpoint", enable_mlflow=True, enable_tensorboard=True)
    assert p.config.run_dir == tmp_path / "checkpoint" / "primus"
    assert p.config.tensorboard.log_dir == p.config.run_dir / "tb"
    assert p.config.run_name == tmp_path.name  # the job's dump folder, not "primus"


def test_exit_deadline_reaches_the_run_and_a_bad_one_is_refused(tmp_path):
    assert plan(tmp_path, enable_mlflow=True, primus_exit_deadline=4.5).config.exit_deadline_s == 4.5
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(TrackingPlanError, match=rf"metrics.primus_exit_deadline={bad!r} is invalid: expected "
                                                    r"float > 0 and <= 86400 \(Seconds to wait at exit"):
            plan(tmp_path, enable_tensorboard=True, primus_exit_deadline=bad)


def test_primus_train_run_directory_and_one_run_per_rank(tmp_path):
    p = plan(tmp_path, rank=1, explicit=tmp_path / "exp", enable_tensorboard=True, save_for_all_ranks=True,
             enable_mlflow=True, mlflow_run_name="trial", mlflow_upload_logs=True, mlflow_upload_traces=True)
    assert p.config.run_dir == tmp_path / "exp" / "rank_1" and p.all_ranks
    assert p.config.tensorboard.log_dir == tmp_path / "exp" / "rank_1" / "tb"
    assert p.config.run_name == p.config.mlflow.run_name == "trial-rank1"
    assert p.run_config({}, {}).tags["primus.rank"] == "1"  # the rank's own run says which (Pushgateway: label rank)
    assert "primus.rank" not in plan(tmp_path, rank=1, enable_tensorboard=True).run_config({}, {}).tags
    assert p.log_file == p.config.run_dir / "logs" / "rank_1.log" and p.traces_dir == p.config.run_dir / "traces"
    assert p.config.mlflow.upload_logs and p.config.mlflow.upload_traces


@pytest.mark.parametrize(("local_ranks", "all_ranks", "shared"), [("2", True, True), ("1", True, False),
                                                                  (None, True, False), ("2", False, False)])
def test_a_nodes_ranks_share_a_delivery_process_only_when_each_tracks(tmp_path, monkeypatch, local_ranks,
                                                                      all_ranks, shared):
    if local_ranks is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_ranks)
    p = plan(tmp_path, rank=1, explicit=tmp_path / "exp", enable_tensorboard=True, save_for_all_ranks=all_ranks)
    assert p.config.delivery_group == (tmp_path / "exp" if shared else None)


def test_trace_report_reads_this_runs_traces_and_needs_the_profiler(tmp_path):
    p = plan(tmp_path, enable_mlflow=True, mlflow_upload_tracelens_report=True, profiling=True)
    assert p.traces_dir == p.config.run_dir / "traces" and not p.notices.warnings
    assert p.config.mlflow.upload_trace_report and not p.config.mlflow.upload_traces
    unprofiled = plan(tmp_path, enable_mlflow=True, mlflow_upload_tracelens_report=True)
    assert unprofiled.notices.warnings == ["metrics.mlflow_upload_tracelens_report is on but profiling is off: there "
                                           "will be no traces to report on. Set profiler.enable_profiling: true "
                                           "(--profiler.enable-profiling)."]
    unprofiled = plan(tmp_path, enable_mlflow=True, mlflow_upload_tracelens_report=True, profiler_section="profiling")
    assert unprofiled.notices.warnings[0].endswith("Set profiling.enable_profiling: true "
                                                   "(--profiling.enable-profiling).")


def test_log_freq_below_one_is_refused(tmp_path):
    with pytest.raises(TrackingPlanError, match=r"metrics.log_freq=0 is invalid: expected int >= 1 \(Steps between metric logs"):
        plan(tmp_path, log_freq=0, enable_tensorboard=True)


def test_every_problem_is_listed_at_once(tmp_path):
    with pytest.raises(TrackingPlanError) as refused:
        plan(tmp_path, log_freq=0, primus_exit_deadline=0.0, enable_tensorboard=True)
    assert [p.split(" is invalid")[0] for p in refused.value.problems] == ["metrics.log_freq=0",
                                                                           "metrics.primus_exit_deadline=0.0"]


def test_databricks_without_credentials_is_refused_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "databricks")
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(TrackingPlanError,
                       match="MLFLOW_TRACKING_URI='databricks'.*DATABRICKS_HOST and DATABRICKS_TOKEN"):
        plan(tmp_path, enable_mlflow=True)


def test_wandb_settings_come_from_upstreams_environment_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_TEAM", "team-a")
    monkeypatch.setenv("WANDB_RUN_NAME", "trial")
    upstreams = {"WANDB_RUN_ID": "abc", "WANDB_RUN_NOTES": "n", "WANDB_RUN_TAGS": "x, y", "WANDB_RUN_JOB_TYPE": "jt",
                 "WANDB_FORK_FROM": "src?_step=3"}
    for key, value in upstreams.items():
        monkeypatch.setenv(key, value)
    p = plan(tmp_path, enable_wandb=True)
    wandb = p.config.wandb
    assert (wandb.project, wandb.entity, wandb.name, wandb.mode) == ("torchtitan", "team-a", "trial", "offline")
    assert (wandb.run_id, wandb.notes, wandb.tags, wandb.job_type, wandb.fork_from, wandb.resume_from) == (
        "abc", "n", ("x", "y"), "jt", "src?_step=3", None)
    assert wandb.save_dir == p.config.run_dir / "wandb"
    assert p.notices.warnings == []
    monkeypatch.setenv("WANDB_RESUME_FROM", "abc?_step=3")
    with pytest.raises(TrackingPlanError, match="wandb.resume_from and wandb.fork_from"):
        plan(tmp_path, enable_wandb=True)


def test_wandb_without_credentials_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_PROJECT", "mine")
    p = plan(tmp_path, enable_wandb=True)
    assert p.config.wandb.project == "mine" and p.config.wandb.mode == "online"
    assert len(p.notices.warnings) == 1 and "no credentials were found" in p.notices.warnings[0]


def test_perf_metric_set_needs_mlflow(tmp_path):
    assert plan(tmp_path, enable_mlflow=True, mlflow_upload_performance_metrics=True).perf_metrics
    assert not plan(tmp_path, enable_tensorboard=True, mlflow_upload_performance_metrics=True).perf_metrics


def test_journal_retention_reaches_the_run_and_a_bad_one_is_refused(tmp_path):
    assert plan(tmp_path, enable_tensorboard=True).config.journal_retention == "keep"
    assert plan(tmp_path, enable_mlflow=True, primus_journal_retention="delivered").config.journal_retention == \
        "delivered"
    with pytest.raises(TrackingPlanError, match=r"metrics.primus_journal_retention='forever' is invalid: expected one "
                                                r"of \['keep', 'delivered'\] \(keep: the run's journal stays whole"):
        plan(tmp_path, enable_tensorboard=True, primus_journal_retention="forever")


def test_the_users_tags_from_the_metrics_section_and_wandb_notes_over_upstreams_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_RUN_TAGS", "upstream,vars")
    monkeypatch.delenv("WANDB_TAGS", raising=False)
    p = plan(tmp_path, enable_wandb=True, enable_mlflow=True, mlflow_tags={"team": "titan"},
             wandb_notes="from the option")
    assert dict(p.user_tags) == {"team": "titan"}
    assert (p.config.wandb.tags, p.config.wandb.notes) == (("upstream", "vars"), "from the option")


def test_a_bad_tag_mapping_is_refused_with_its_key(tmp_path):
    with pytest.raises(TrackingPlanError, match=r"metrics\.mlflow_tags=\{'a': \[1\]\} is invalid: 'a' holds a list"):
        plan(tmp_path, enable_mlflow=True, mlflow_tags={"a": [1]})


@pytest.mark.slow
def test_a_real_start_up_with_a_bad_primus_setting_stops_with_the_message_alone(titan_run, tmp_path):
    """python -m primus.backends.torchtitan (this checkout's): the plan's refusal in upstream's parse_args (raised on
    purpose by the config patch) is the user's error: the message alone, no "failed and is now disabled", no
    traceback, a non-zero exit before the first step."""
    from support.launch import CRASH_MARKERS
    from support.this_primus import this_primus_folder, with_this_primus

    run = titan_run("bad-primus-setting", "--metrics.log-freq", "0", "--metrics.enable-tensorboard",
                    env=with_this_primus(this_primus_folder(tmp_path), {}))
    assert run.returncode == 1, run.explain()
    assert ("primus: invalid Primus settings:\n  - metrics.log_freq=0 is invalid: expected int >= 1 (Steps between "
            "metric logs.)") in run.output, run.explain()
    assert "failed and is now disabled" not in run.output, run.explain()
    assert not [marker for marker in CRASH_MARKERS if marker in run.output], run.explain()
    assert "step:  1" not in run.output
