"""The decision of which trackers run, from parsed Megatron arguments (no training here)."""

import argparse
from pathlib import Path

import pytest

from primus.backends.megatron.arguments import add_primus_arguments
from primus.backends.megatron.tracking_plan import plan_tracking
from primus.tracking.plan import TrackingPlanError

UPSTREAM_DEFAULTS = dict(tensorboard_dir=None, wandb_project=None, wandb_exp_name=None, wandb_save_dir=None,
                         wandb_entity=None, save=None, tensorboard_log_interval=1, tensorboard_queue_size=1000,
                         rank=0)


def parse(*argv, **upstream):
    parser = add_primus_arguments(argparse.ArgumentParser())
    args = parser.parse_args(list(argv))
    for key, value in {**UPSTREAM_DEFAULTS, **upstream}.items():
        setattr(args, key, value)
    return args


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("WANDB_PROJECT", "WANDB_RUN_NAME", "WANDB_TEAM", "WANDB_ENTITY", "WANDB_API_KEY", "WANDB_MODE",
                "MLFLOW_TRACKING_URI", "DATABRICKS_HOST", "DATABRICKS_TOKEN", "MLFLOW_EXPERIMENT_NAME",
                "PRIMUS_PROMETHEUS_PUSHGATEWAY", "PRIMUS_PROMETHEUS_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("PRIMUS_OUTPUT_ROOT", str(tmp_path / "out"))


def test_nothing_is_tracked_by_default():
    plan = plan_tracking(parse())
    assert plan.config is None


def test_a_pushgateway_or_a_metrics_port_alone_is_tracking_and_a_bad_one_is_refused():
    plan = plan_tracking(parse("--primus-prometheus-pushgateway", "http://gw.example:9091",
                               "--primus-prometheus-push-interval", "5", "--primus-prometheus-port", "9464"))
    assert plan.config.prometheus.pushgateway == "http://gw.example:9091" and plan.config.tensorboard is None
    assert (plan.config.prometheus.push_interval_s, plan.config.prometheus.port) == (5.0, 9464)
    with pytest.raises(TrackingPlanError, match=r"prometheus.pushgateway='gw.example' is not valid: give the "
                                                r"Pushgateway as http://HOST:PORT"):
        plan_tracking(parse("--primus-prometheus-pushgateway", "gw.example"))


def test_upstream_command_line_keeps_its_meaning(tmp_path):
    plan = plan_tracking(parse(tensorboard_dir=str(tmp_path / "tb"), wandb_project="p"))
    assert plan.config.tensorboard.log_dir == tmp_path / "tb"
    assert plan.config.wandb.project == "p"


def test_disable_tensorboard_true_wins_over_a_directory(tmp_path):
    plan = plan_tracking(parse("--disable-tensorboard", tensorboard_dir=str(tmp_path / "tb")))
    assert plan.config is None  # TensorBoard was the only tracker asked for
    assert any("no event files" in n for n in plan.notices.infos)


def test_tensorboard_without_directory_is_derived_and_said(tmp_path):
    args = parse("--disable-tensorboard", "false", "--primus-run-dir", str(tmp_path / "run"))
    plan = plan_tracking(args)
    assert plan.config.tensorboard.log_dir == tmp_path / "run" / "tensorboard"
    assert args.tensorboard_dir == str(tmp_path / "run" / "tensorboard")
    assert any("tensorboard_dir not set" in n for n in plan.notices.infos)


def test_wandb_names_are_derived_not_a_crash(tmp_path):
    plan = plan_tracking(parse("--disable-wandb", "false", "--primus-run-dir", str(tmp_path / "r1")))
    resolved = plan.config.resolve()
    assert (resolved.wandb.name, resolved.wandb.save_dir) == ("r1", tmp_path / "r1" / "wandb")
    assert any("no credentials" in w for w in plan.notices.warnings)


def test_wandb_names_from_environment(monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "envp")
    monkeypatch.setenv("WANDB_RUN_NAME", "envrun")
    monkeypatch.setenv("WANDB_TEAM", "team")
    monkeypatch.setenv("WANDB_MODE", "offline")
    plan = plan_tracking(parse("--disable-wandb", "false"))
    resolved = plan.config.resolve()
    assert (resolved.wandb.project, resolved.wandb.name, resolved.wandb.entity) == ("envp", "envrun", "team")
    assert plan.notices.warnings == []


def test_databricks_without_host_is_an_error_before_training(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "databricks")
    with pytest.raises(TrackingPlanError, match="DATABRICKS_HOST"):
        plan_tracking(parse("--disable-mlflow", "false"))


def test_mlflow_upload_flags_without_mlflow_are_reported():
    plan = plan_tracking(parse("--mlflow-upload-logs"))
    assert plan.config is None and plan.log_file is None
    assert any("mlflow_upload_logs ignored" in n for n in plan.notices.infos)


def test_tensorboard_dir_is_recorded_as_given_with_the_folders_primus_chose(tmp_path):
    args = parse("--disable-tensorboard", "false", "--disable-mlflow", "false", "--mlflow-upload-traces",
                 "--primus-run-dir", str(tmp_path / "run"), tensorboard_dir="tb", profile=True,
                 use_pytorch_profiler=True)
    plan = plan_tracking(args)
    assert plan.recorded_params == {"tensorboard_dir": "tb",
                                    "primus_tensorboard_events_dir": str(Path("tb").absolute()),
                                    "primus_traces_dir": str(tmp_path / "run" / "traces")}
    assert args.tensorboard_dir == str(tmp_path / "run" / "traces" / "profiler")  # what upstream's profiler reads


def test_mlflow_uploads_of_logs_traces_and_trace_report(tmp_path):
    profiler = dict(rank=2, profile=True, use_pytorch_profiler=True)
    args = parse("--disable-mlflow", "false", "--mlflow-upload-logs", "--mlflow-upload-tracelens-report",
                 "--primus-run-dir", str(tmp_path / "run"), **profiler)
    plan = plan_tracking(args)
    assert plan.log_file == tmp_path / "run" / "logs" / "rank_2.log"  # every rank's own console copy
    assert plan.config.mlflow.upload_trace_report and not plan.config.mlflow.upload_traces
    assert args.tensorboard_dir == str(tmp_path / "run" / "traces" / "profiler")  # the profiler writes ../torch_profile
    assert plan.recorded_params == {"tensorboard_dir": None, "primus_traces_dir": str(tmp_path / "run" / "traces")}
    assert not plan.notices.warnings
    unprofiled = plan_tracking(parse("--disable-mlflow", "false", "--mlflow-upload-traces",
                                     "--mlflow-upload-tracelens-report", **{**profiler, "profile": False}))
    assert unprofiled.log_file is None
    assert unprofiled.notices.warnings == [
        "mlflow_upload_traces and mlflow_upload_tracelens_report are on but the torch profiler is off: there will "
        "be no traces. Add --profile --use-pytorch-profiler (steps from --profile-step-start to --profile-step-end)."]


def test_every_range_problem_is_listed_at_once():
    with pytest.raises(TrackingPlanError) as e:
        plan_tracking(parse("--log-avg-reset-interval", "0", "--primus-exit-deadline", "0"))
    assert len(e.value.problems) == 2
    assert "log_avg_reset_interval=0 is invalid: --log-avg-reset-interval expects int >= 1 (Log entries" in str(e.value)


def test_bad_toggle_value_names_the_flag(capsys):
    with pytest.raises(SystemExit):
        parse("--disable-mlflow", "maybe")
    assert "--disable-mlflow" in capsys.readouterr().err


def test_run_dir_follows_the_checkpoint_directory(tmp_path):
    plan = plan_tracking(parse("--disable-mlflow", "false", save=str(tmp_path / "ckpt")))
    assert plan.config.run_dir == Path(tmp_path / "ckpt" / "primus")
    assert plan.config.mlflow.run_name == "ckpt"


def test_journal_retention_reaches_the_run_and_a_typo_is_refused_by_the_parser(tmp_path, capsys):
    args = parse("--disable-tensorboard", "false", "--primus-run-dir", str(tmp_path / "run"),
                 "--primus-journal-retention", "delivered")
    assert plan_tracking(args).config.journal_retention == "delivered"
    assert plan_tracking(parse("--disable-tensorboard", "false")).config.journal_retention == "keep"
    with pytest.raises(SystemExit):
        parse("--primus-journal-retention", "deliverd")
    assert "invalid choice: 'deliverd' (choose from 'keep', 'delivered')" in capsys.readouterr().err


def test_the_users_tags_and_notes_from_flags_reach_the_run(tmp_path):
    plan = plan_tracking(parse("--disable-mlflow", "false", "--disable-wandb", "false", "--mlflow-tags",
                               "team=llm,stage=sft", "--mlflow-description", "lr sweep", "--wandb-tags", "a,b",
                               "--wandb-notes", "first try", "--primus-run-dir", str(tmp_path / "run")))
    assert dict(plan.user_tags) == {"team": "llm", "stage": "sft", "mlflow.note.content": "lr sweep"}
    assert (plan.config.wandb.tags, plan.config.wandb.notes) == (("a", "b"), "first try")
    assert plan.run_config({}, {"primus.backend": "megatron"}).tags == {**plan.user_tags, "primus.backend": "megatron"}


@pytest.mark.parametrize("argv, message", [
    (("--mlflow-tags", "team"), "mlflow_tags='team' (--mlflow-tags) is invalid: 'team' has no '='"),
    (("--mlflow-tags", "primus.backend=x"), "mlflow_tags='primus.backend=x' (--mlflow-tags) is invalid: key "
                                            "'primus.backend' is in the primus.* namespace"),
    (("--wandb-tags", "ghp_" + "a" * 30), "wandb_tags='***' (--wandb-tags) is invalid: 'tag' holds a credential"),
])
def test_bad_user_tags_are_refused_before_training_naming_the_flag(argv, message):
    with pytest.raises(TrackingPlanError) as refused:
        plan_tracking(parse("--disable-mlflow", "false", *argv))
    assert refused.value.problems[0].startswith(message)


def test_the_memory_snapshot_goes_with_the_traces(tmp_path):
    args = parse("--disable-mlflow", "false", "--mlflow-upload-traces", "--primus-run-dir", str(tmp_path / "run"),
                 record_memory_history=True, memory_snapshot_path="snapshot.pickle", profile=False,
                 use_pytorch_profiler=False)
    plan = plan_tracking(args)
    assert args.memory_snapshot_path == str(tmp_path / "run" / "traces" / "memory" / "snapshot.pickle")
    assert (tmp_path / "run" / "traces" / "memory").is_dir()  # upstream opens the file, not its folder
    assert plan.recorded_params["memory_snapshot_path"] == "snapshot.pickle"  # the user's, as given
    assert plan.notices.warnings == []  # traces without the profiler: the snapshot is one


@pytest.mark.slow
def test_a_real_start_up_with_bad_primus_arguments_stops_with_the_message_alone(megatron_run):
    """pretrain_gpt.py: the plan's refusal (raised on purpose by the validate_args patch) is the user's error, not the
    patch failing: the console has every problem with its flag and fix, no "failed and is now disabled" and no
    traceback, and the job exits non-zero before its first iteration, leaving no run directory."""
    from support.journal_files import run_dirs_under
    from support.launch import CRASH_MARKERS

    run = megatron_run("bad-primus-arguments", "--log-avg-reset-interval", "0", "--disable-mlflow", "false",
                       "--mlflow-tags", "team")
    assert run.returncode == 1, run.explain()
    assert ("primus: invalid Primus settings:\n"
            "  - mlflow_tags='team' (--mlflow-tags) is invalid: 'team' has no '=': write key=value,key=value\n"
            "  - log_avg_reset_interval=0 is invalid: --log-avg-reset-interval expects int >= 1") in run.output, \
        run.explain()
    assert "failed and is now disabled" not in run.output, run.explain()
    assert not [marker for marker in CRASH_MARKERS if marker in run.output], run.explain()
    assert "iteration        1/" not in run.output and run_dirs_under(run.log_path.parent) == []
