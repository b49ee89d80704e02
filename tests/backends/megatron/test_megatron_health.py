"""Run health on real Megatron runs (the session's shared trainings): an evaluation is journaled as an expected
pause (so a long one is no stall), a healthy run raises no alert, and a two-rank run that never stalled leaves no
stacks files (each rank registered for them at start-up and removed its empty file at its end)."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import result
from support.journal_files import journal_lines, run_dirs_under
from support.otlp_receiver import OtlpReceiver
from support.readers import read_wandb_alerts

pytestmark = pytest.mark.slow


def events(run_dir, name):
    return [r["d"] for r in journal_lines(run_dir) if r["k"] == "e" and r["d"].get("event") == name]


def test_evaluations_are_marked_busy_and_a_healthy_run_has_no_alert(megatron_run, mlflow_server):
    run = result(megatron_run, mlflow_server.uri, "tb")  # evaluates at iteration 3, then validation and test
    assert run.returncode == 0, run.explain()
    [run_dir] = run_dirs_under(run.log_path.parent)
    marks = [(d["what"], d["on"]) for d in events(run_dir, "busy")]
    assert marks == [("evaluation", True), ("evaluation", False)] * 3
    assert events(run_dir, "alert") == []
    assert "[primus] ALERT" not in run.output


def test_a_two_rank_run_that_never_stalled_leaves_no_stacks(megatron_run, mlflow_server):
    run = result(megatron_run, mlflow_server.uri, "dp2_all")
    assert run.returncode == 0, run.explain()
    [run_dir] = run_dirs_under(run.log_path.parent)
    assert not (run_dir / "stacks").exists()
    assert events(run_dir, "alert") == []


def test_a_loss_upstream_rejects_as_nan_is_told_as_nan_at_its_iteration(megatron_run, mlflow_uri, mlflow_client,
                                                                        webhook_receiver):
    """A huge learning rate: upstream's rerun state machine finds the NaN and stops the job (here in its own
    checkpoint code, a TypeError without --save); the person hears "nan at iteration N" before the failure, and an
    OpenTelemetry collector gets both alerts as log records."""
    from megatron_tracking_runs import toggles

    with OtlpReceiver() as collector:
        run = megatron_run("nan", *toggles(False, True, True), "--mlflow-experiment-name", "h6-nan", "--lr", "1e4",
                           "--min-lr", "1e3", "--train-iters", "12", "--wandb-project", "h6-nan",
                           "--wandb-save-dir", "wandb-nan",
                           env={"MLFLOW_TRACKING_URI": mlflow_uri, "PRIMUS_ALERT_WEBHOOK": webhook_receiver.url,
                                "WANDB_MODE": "offline", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    assert run.returncode != 0, run.explain()
    logged = [(r.event_name, r.attributes["primus.alert.kind"], r.attributes["primus.step"]) for r in collector.logs()]
    kinds_steps = [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies]
    assert logged == [("primus.alert", kind, step) for kind, step in kinds_steps], (logged, kinds_steps)
    kinds = [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies]
    [(_, at)] = [k for k in kinds if k[0] == "nan"]
    assert kinds[-1][0] == "failed" and kinds[-1][1] < at, kinds  # the last iteration logged, not the samples axis
    assert "[primus] ALERT nan run " in run.output and f"iteration {at}: upstream rejected a result" in run.output
    [mlrun] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("h6-nan").experiment_id])
    assert mlrun.data.tags["primus.alert.nan"].startswith(f"iteration {at}: upstream rejected a result at iteration")
    assert "NaN" in mlrun.data.tags["primus.alert.nan"]
    assert mlrun.info.status == "FAILED" and "primus.alert.failed" in mlrun.data.tags
    alerts = read_wandb_alerts(run.log_path.parent)  # W&B's run.alert, kept in the offline run file
    assert [title for title, _, _ in alerts] == ["primus: nan", "primus: failed"]
    assert alerts[0][1] == mlrun.data.tags["primus.alert.nan"]
