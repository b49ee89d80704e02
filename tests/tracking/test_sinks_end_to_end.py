"""Every sink on at once, against the real trackers: TensorBoard event files, W&B offline files and a
real MLflow server, read back. Every step and value must be present exactly once per sink."""

from __future__ import annotations

import time

import pytest
from support.journal_files import journal_lines
from support.readers import (
    mlflow_history,
    read_tb_scalars,
    read_tb_texts,
    read_wandb_alerts,
    read_wandb_history,
    read_wandb_summary,
    wandb_run_ids,
)

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
from primus.tracking.goodput.accounting import NAMES as GOODPUT
from primus.tracking.journal.records import Alert, AlertKind
from primus.tracking.measure.names import MlflowKeys, mlflow_key

pytestmark = pytest.mark.slow

NAMES = ["lm loss", "learning-rate", "grad-norm", "lm loss validation ppl", "perf/tokens_per_sec_per_gpu", "mfu(%)"]


def value(step: int, i: int) -> float:
    return step * 0.5 + i + 0.25  # exact in float32, so TensorBoard compares exactly too


def config(tmp_path, name, **kw) -> TrackingConfig:
    return TrackingConfig(run_dir=tmp_path / "run", experiment_name=name, tensorboard=TensorBoardConfig(tmp_path / "tb"),
                          wandb=WandbConfig(project="primus-tests"), mlflow=MlflowConfig(),
                          params={"lr": 3e-4, "model": {"layers": 2}}, tags={"team": "tracking"},
                          exit_deadline_s=180, **kw)


def log_steps(run, steps) -> None:
    for s in steps:
        run.log(s, {n: value(s, i) for i, n in enumerate(NAMES)})


def assert_every_step_once(tmp_path, client, run, wandb_root, steps):
    tb = read_tb_scalars(tmp_path / "tb")
    assert set(NAMES) <= set(tb)  # upstream names reach TensorBoard unchanged
    for i, n in enumerate(NAMES):
        assert tb[n] == [(s, value(s, i)) for s in steps]
    rows = [r for r in read_wandb_history(wandb_root) if any(n in r for n in NAMES)]
    assert [r["_step"] for r in rows] == list(steps)  # one W&B row per step
    for r in rows:
        assert {n: r[n] for n in NAMES} == {n: value(r["_step"], i) for i, n in enumerate(NAMES)}
    for i, n in enumerate(NAMES):
        assert mlflow_history(client, run.mlflow_run_id, mlflow_key(n)) == [(s, value(s, i)) for s in steps]


def test_all_sinks_receive_every_step_exactly_once(tmp_path, mlflow_client, wandb_offline):
    run = start_run(config(tmp_path, "e2e"))
    log_steps(run, range(30))
    run.log(640, {"lm loss vs samples": 0.5}, only=["tensorboard"])  # an x-axis only TensorBoard has
    run.log_text("notes", "hello from the test", step=3)
    assert run.flush(180)
    run.finish()

    assert_every_step_once(tmp_path, mlflow_client, run, wandb_offline, range(30))
    assert read_tb_scalars(tmp_path / "tb")["lm loss vs samples"] == [(640, 0.5)]
    assert not any("lm loss vs samples" in r for r in read_wandb_history(wandb_offline))
    mlrun = mlflow_client.get_run(run.mlflow_run_id)
    assert "lm loss vs samples" not in mlrun.data.metrics
    assert mlrun.info.status == "FINISHED"
    assert mlrun.info.run_name == "run"
    assert mlrun.data.params["lr"] == "0.0003" and mlrun.data.params["model.layers"] == "2"
    assert mlrun.data.tags["team"] == "tracking"
    assert mlrun.data.tags["text/notes"] == "hello from the test"
    assert mlrun.data.tags["primus.version.mlflow"] == "3.17.2"
    assert "primus.patches" in mlrun.data.tags
    assert wandb_run_ids(wandb_offline) == {run.wandb_run_id}
    journal = journal_lines(tmp_path / "run")
    assert [r["s"] for r in journal if r["k"] == "m"] == [*range(30), 640]
    assert journal[-5]["o"] == ["tensorboard"]  # then the text, the goodput breakdown (a text and an event), the end
    assert journal[-1]["d"] == {"event": "end", "status": "FINISHED", "dropped": {}}


def test_same_run_dir_resumes_the_same_runs_without_duplicates(tmp_path, mlflow_client, wandb_offline):
    first = start_run(config(tmp_path, "resume"))
    log_steps(first, range(5))
    assert first.flush(180)
    first.finish()
    # TensorBoard reads event files in name order: whole-second time, pid, then a per-process counter compared
    # as text (".10" < ".9"). A real restart is a new pid seconds later; in one process, let the second tick.
    time.sleep(1.1)

    second = start_run(config(tmp_path, "resume"))
    assert second.resumed and second.wandb_run_id == first.wandb_run_id
    assert second.mlflow_run_id == first.mlflow_run_id
    log_steps(second, range(5, 10))
    second.finish()

    assert_every_step_once(tmp_path, mlflow_client, second, wandb_offline, range(10))
    assert wandb_run_ids(wandb_offline) == {first.wandb_run_id}
    assert mlflow_client.get_run(second.mlflow_run_id).info.status == "FINISHED"
    assert len(mlflow_client.search_runs([mlflow_client.get_experiment_by_name("resume").experiment_id])) == 1


def test_mlflow_keys_are_readable_and_a_resumed_run_keeps_them(tmp_path, mlflow_client):
    """Two names that meet on one readable key: the later gets a suffix, and keeps it when the run resumes,
    even when the names then come in the other order."""
    def mlflow_only():
        return TrackingConfig(run_dir=tmp_path / "run", experiment_name="keys", mlflow=MlflowConfig(),
                              exit_deadline_s=180)

    first = start_run(mlflow_only())
    first.log(1, {"throughput(tps)": 1.0, "memory/max_active(GiB)": 2.0})
    first.log(2, {"throughput_tps": 3.0})
    first.finish()
    second = start_run(mlflow_only())
    second.log(3, {"throughput_tps": 4.0})
    second.log(4, {"throughput(tps)": 5.0})
    second.finish()

    later = MlflowKeys({"throughput(tps)": "throughput_tps"})("throughput_tps")
    assert set(mlflow_client.get_run(first.mlflow_run_id).data.metrics) - set(GOODPUT) == {
        "throughput_tps", later, "memory/max_active_GiB"}
    assert mlflow_history(mlflow_client, first.mlflow_run_id, "throughput_tps") == [(1, 1.0), (4, 5.0)]
    assert mlflow_history(mlflow_client, first.mlflow_run_id, later) == [(2, 3.0), (3, 4.0)]


def test_an_alert_reaches_every_tracker_its_own_way(tmp_path, mlflow_client, wandb_offline):
    run = start_run(config(tmp_path, "alerts"))
    log_steps(run, range(8))
    run.alert(Alert(AlertKind.NAN, 6, "lm loss is nan at iteration 6", time.time()))
    run.alert(Alert(AlertKind.STALLED, 7, "no step for 31 s after step 7 (allowed 30 s)", time.time()))
    run.finish()

    tags = mlflow_client.get_run(run.mlflow_run_id).data.tags
    assert tags["primus.alert.nan"] == "iteration 6: lm loss is nan at iteration 6"
    assert tags["primus.alert.stalled"] == "iteration 7: no step for 31 s after step 7 (allowed 30 s)"
    assert mlflow_history(mlflow_client, run.mlflow_run_id, "health/alerts") == [(6, 1.0), (7, 2.0)]
    assert read_wandb_alerts(wandb_offline) == [
        ("primus: nan", "iteration 6: lm loss is nan at iteration 6", "ERROR"),
        ("primus: stalled", "iteration 7: no step for 31 s after step 7 (allowed 30 s)", "ERROR"),
    ]
    assert read_wandb_summary(wandb_offline)["primus.alert.nan"] == "iteration 6: lm loss is nan at iteration 6"
    assert read_tb_texts(tmp_path / "tb")["primus.alert.stalled/text_summary"] == [
        (7, "iteration 7: no step for 31 s after step 7 (allowed 30 s)")
    ]
