"""Goodput across a restart, on real upstream trainings (Megatron and TorchTitan, tiny, on CPU): a run that
checkpoints at step 3 is SIGKILLed before step 6 (steps 4 and 5 trained and logged, then lost), and restarted from
the checkpoint into the same run directory. The goodput figures (primus/tracking/goodput/accounting.py) are journaled at
every log step and at the end, reach the one MLflow run, and the end's breakdown adds up to the wall time from the
first attempt's process start to the end (within ``SUM_TOLERANCE_S``: each figure is rounded to the millisecond)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from reliability_runs import Training, journal, mlflow_run_id
from support.journal_files import journal_lines
from support.timing import wait_for

from primus.tracking.goodput import accounting as goodput
from primus.tracking.measure.names import mlflow_key

pytestmark = pytest.mark.slow

STEPS, CHECKPOINT_EVERY, KILL_AT = 7, 3, 6
SUM_TOLERANCE_S = 0.05  # nine figures rounded to 1 ms, and the end record's time taken a few µs after the figures'


@pytest.fixture(scope="module")
def killed_then_restarted(backend, mlflow_server, tmp_path_factory, titan_assets_dir):
    """(wall-clock time before the first launch, the killed training, its restart)"""
    root = tmp_path_factory.mktemp(f"goodput-{backend.name}")
    env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    args = backend.args(STEPS, f"goodput-{backend.name}", tensorboard=False)
    launched_at = time.time()
    killed = Training(backend, root, [*args, *backend.checkpoint(CHECKPOINT_EVERY, load=False)], name="killed",
                      env=env, gates=(KILL_AT,), assets=titan_assets_dir)
    killed.wait_at(KILL_AT)
    # upstream logged steps 1-5 before the gate; the hub journals them a tick later, so the kill waits for that: the
    # node failure this stands for comes after them (what a kill within a tick loses is the journal's own tests')
    logged = set(backend.logged_before(KILL_AT))
    wait_for(lambda: logged <= {r["s"] for r in journal_lines(killed.run_dir(), skip_torn=True)
                                if r["k"] == "m" and backend.loss in r["d"]}, 60, what=f"steps {sorted(logged)} journaled")
    # the trainer and every process it started (a DataLoader's, the tracker delivery's), at once: as a node failure
    # leaves it, no end record, nothing flushed; a child left alone would outlive its killed parent
    os.killpg(killed.process.pid, signal.SIGKILL)
    killed.wait()
    resumed = Training(backend, root, [*args, *backend.checkpoint(CHECKPOINT_EVERY, load=True)], name="resumed",
                       env=env, assets=titan_assets_dir)
    assert resumed.wait().returncode == 0, resumed.result().explain()
    return launched_at, killed, resumed


def goodput_records(run_dir) -> list[dict]:
    """The log steps' records with figures, then the end's event (``goodput``)."""
    return [r for r in journal(run_dir) if goodput.PRODUCTIVE in r["d"]]


def test_every_log_step_carries_the_cumulative_figures(killed_then_restarted, backend):
    run_dir = killed_then_restarted[2].run_dir()
    records = goodput_records(run_dir)
    logged = [r["s"] for r in journal(run_dir) if r["k"] == "m" and backend.loss in r["d"]]
    assert [r["s"] for r in records if r["k"] == "m"] == logged
    assert all(set(goodput.EVERY_LOG_STEP) <= set(r["d"]) for r in records)
    assert [r["d"].get("event") for r in records if r["k"] == "e"] == ["goodput"]  # the restart's end; killed: none
    # cumulative: the wall time they add up to only grows, restart included
    walls = [sum(r["d"][name] for name in goodput.CHARGED) for r in records]
    assert walls == sorted(walls)


def test_the_breakdown_of_the_killed_and_restarted_run_adds_up_to_its_wall_time(killed_then_restarted, backend):
    launched_at, killed, resumed = killed_then_restarted
    run_dir = resumed.run_dir()
    assert run_dir == killed.run_dir()
    records = journal(run_dir)
    starts = [r for r in records if r["k"] == "e" and r["d"]["event"] == "start"]
    assert len(starts) == 2
    final = goodput_records(run_dir)[-1]  # the end's
    figures = final["d"]
    wall = (final["t"] - starts[0]["d"]["process_start_ms"]) / 1000
    print(f"goodput breakdown ({backend.name}): wall {wall:.3f} s,", {n: figures[n] for n in goodput.EVERY_LOG_STEP})
    assert sum(figures[name] for name in goodput.CHARGED) == pytest.approx(wall, abs=SUM_TOLERANCE_S)
    assert 0 < figures[goodput.FRACTION] < 1
    assert figures[goodput.LOST] > 0  # steps 4 and 5 were trained, logged, and trained again
    assert all(figures[name] > 0 for name in (goodput.GAP, goodput.STARTUP, goodput.SAVE, goodput.LOAD))
    # the wall time is the test's own: from before the first launch to after the restart's exit
    assert resumed.exited_at is not None
    assert wall <= resumed.exited_at - launched_at + SUM_TOLERANCE_S
    console = resumed.result().output
    assert "[primus] goodput " in console and "(2 attempts)" in console


def test_the_figures_reach_the_one_mlflow_run(killed_then_restarted, backend, session_client):
    run_dir = killed_then_restarted[2].run_dir()
    experiment = session_client.get_experiment_by_name(f"goodput-{backend.name}")
    [run] = session_client.search_runs([experiment.experiment_id])
    assert run.info.run_id == mlflow_run_id(run_dir) and run.info.status == "FINISHED"
    last_step = [r for r in goodput_records(run_dir) if r["k"] == "m"][-1]
    for name in (goodput.PRODUCTIVE, goodput.FRACTION, goodput.LOST):
        history = session_client.get_metric_history(run.info.run_id, mlflow_key(name))
        assert [m.step for m in history] == [r["s"] for r in goodput_records(run_dir) if r["k"] == "m"]
        last = max(history, key=lambda m: m.step)
        assert last.value == pytest.approx(last_step["d"][name], abs=1e-6), name
    disruptions = session_client.get_metric_history(run.info.run_id, mlflow_key(goodput.DISRUPTIONS))
    by_attempt = [r["d"][goodput.DISRUPTIONS] for r in goodput_records(run_dir) if r["k"] == "m"]
    assert by_attempt == sorted(by_attempt) and by_attempt[0] == 0 and by_attempt[-1] == 1  # the restart's steps: 1
    assert sorted((m.step, m.value) for m in disruptions) == [
        (r["s"], r["d"][goodput.DISRUPTIONS]) for r in goodput_records(run_dir) if r["k"] == "m"
    ]
    breakdown = run.data.tags[mlflow_key(f"text/{goodput.GOODPUT_TEXT}")]  # the MLflow sink's tag for a text
    assert breakdown.startswith("goodput ") and "(2 attempts)" in breakdown
