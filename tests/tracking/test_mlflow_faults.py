"""Lossless delivery against a real MLflow server that dies, hangs or never comes back."""

from __future__ import annotations

import statistics
import time

import pytest
from support.readers import mlflow_history
from support.timing import LOAD_FACTOR, p99, timed, within

from primus.cli.main import main as primus_cli
from primus.tracking import MlflowConfig, TrackingConfig, start_run
from primus.tracking.journal.run_state import RunState

pytestmark = pytest.mark.slow


REQUEST_TIMEOUT_S = 2.0


def start(tmp_path, server, experiment, **kw):
    return start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name=experiment, params={"seed": 7},
                                    mlflow=MlflowConfig(tracking_uri=server.uri, request_timeout_s=REQUEST_TIMEOUT_S),
                                    **kw))


def log_steps(run, steps, pause_s=0.0) -> list[float]:
    costs = []
    for s in steps:
        t = time.perf_counter()
        run.log(s, {"loss": 1.0 / (s + 1), "step_x2": 2.0 * s})
        costs.append(time.perf_counter() - t)
        time.sleep(pause_s)
    return costs


def assert_exactly_once(server, run_id, steps):
    from mlflow import MlflowClient

    client = MlflowClient(server.uri)
    assert mlflow_history(client, run_id, "loss") == [(s, 1.0 / (s + 1)) for s in steps]
    assert mlflow_history(client, run_id, "step_x2") == [(s, 2.0 * s) for s in steps]
    return client.get_run(run_id)


def test_server_killed_and_restarted_mid_run_loses_and_duplicates_nothing(tmp_path, fault_mlflow_server):
    run = start(tmp_path, fault_mlflow_server, "kill-restart", exit_deadline_s=90)
    log_steps(run, range(0, 30))
    assert run.flush(180)
    fault_mlflow_server.kill()
    log_steps(run, range(30, 60), pause_s=0.01)
    assert not run.flush(1.0)  # nowhere to deliver while the server is dead
    fault_mlflow_server.restart()
    log_steps(run, range(60, 90))
    assert run.flush(180)
    assert run.stats()["sinks"]["mlflow"]["failures"] > 0
    run.finish()
    assert assert_exactly_once(fault_mlflow_server, run.mlflow_run_id, range(90)).info.status == "FINISHED"


def test_hung_server_costs_the_training_thread_nothing(tmp_path, fault_mlflow_server):
    run = start(tmp_path, fault_mlflow_server, "sigstop", exit_deadline_s=90)
    healthy = log_steps(run, range(200), pause_s=0.005)  # the baseline: the same calls, same load, server up
    assert run.flush(180)
    fault_mlflow_server.pause()
    try:
        costs = log_steps(run, range(200, 600), pause_s=0.005)  # ~3 s of training against a server that never answers
        assert not run.flush(1.0)
    finally:
        fault_mlflow_server.resume()
    # one call that waited for the server would cost the request timeout; the typical call costs what it did
    # with the server up (benchmarks/hub_overhead.py measures the real figures)
    assert p99(costs) < REQUEST_TIMEOUT_S / 10 and max(costs) < REQUEST_TIMEOUT_S
    assert statistics.median(costs) < LOAD_FACTOR * statistics.median(healthy) + 100e-6
    run.finish()
    assert assert_exactly_once(fault_mlflow_server, run.mlflow_run_id, range(600)).info.status == "FINISHED"


EXIT_DEADLINE_S = 3.0


def test_server_that_never_returns_bounds_exit_then_sync_delivers_everything(tmp_path, fault_mlflow_server, capsys):
    baseline = start_run(TrackingConfig(run_dir=tmp_path / "baseline"))  # no tracker: nothing to wait for
    log_steps(baseline, range(50))
    _, baseline_s = timed(baseline.finish)
    fault_mlflow_server.kill()  # down before the run starts and for the whole run
    run = start(tmp_path, fault_mlflow_server, "never-returns", exit_deadline_s=EXIT_DEADLINE_S)
    log_steps(run, range(50))
    _, finishing_s = timed(run.finish)
    assert within(finishing_s, EXIT_DEADLINE_S, baseline_s), (finishing_s, baseline_s)
    assert run.mlflow_run_id is None

    fault_mlflow_server.restart()
    assert primus_cli(["tracking", "sync", str(run.run_dir), "--timeout", "120"]) == 0
    assert "mlflow: delivered, status FINISHED" in capsys.readouterr().out
    synced = RunState(run.run_dir).section("mlflow")["run_id"]
    mlrun = assert_exactly_once(fault_mlflow_server, synced, range(50))
    assert mlrun.info.status == "FINISHED" and mlrun.data.params["seed"] == "7"
    assert primus_cli(["tracking", "sync", str(run.run_dir)]) == 0  # a second sync changes nothing
    assert_exactly_once(fault_mlflow_server, synced, range(50))
