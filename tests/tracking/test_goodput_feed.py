"""Goodput on a real tracked run (primus/tracking/goodput/feed.py): the figures join each logged step's record on
the hub's thread, a restarted run in the same directory reads the earlier attempt from the journal, and the end
journals the breakdown and prints it."""

from __future__ import annotations

import threading
import time

import pytest

from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.goodput.accounting import (
    CHARGED,
    DEVIATION,
    EVERY_LOG_STEP,
    GAP,
    GOODPUT_EVENT,
    GOODPUT_TEXT,
    LOAD,
    LOST,
    PRODUCTIVE,
    SAVE,
)
from primus.tracking.goodput.feed import attempt_start_fields, process_start_s
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import EVENT, METRICS, TEXT, CheckpointLoaded, CheckpointSaved
from primus.tracking.run import start_run
from primus.tracking.settings.config import TrackingConfig

STEP_S = 0.02


def attempt(run_dir, steps, save_at=None, load=None):
    run = start_run(TrackingConfig(run_dir=run_dir, delivery="thread"))
    checkpoints = CheckpointJournal(run)
    if load is not None:
        checkpoints.load_started()
        checkpoints.loaded(CheckpointLoaded(path="/ckpt", iteration=load))
    for step in steps:
        time.sleep(STEP_S)  # the step's own time: productive, or lost when trained again
        run.log(step, {"loss": 1.0})
        if step == save_at:
            checkpoints.save_started(step)
            checkpoints.save_ended(CheckpointSaved(step, "/ckpt", "ckpt", f"iteration-{step}"))
    run.flush(10)
    run.finish()


def test_two_attempts_figures_at_every_step_and_the_end(tmp_path, capsys):
    attempt(tmp_path, [1, 2, 3, 4], save_at=2)
    attempt(tmp_path, [3, 4, 5], load=2)
    records = list(read_all(tmp_path))
    steps = [r for r in records if r.kind == METRICS]
    assert [r.step for r in steps] == [1, 2, 3, 4, 5]  # 3 and 4 again: tracked by the first attempt already
    assert all(set(EVERY_LOG_STEP) <= set(r.data) for r in steps)
    assert [r.step for r in steps if DEVIATION in r.data] == [2, 4, 5]  # step 1 ends the start-up; a save before 3
    ends = [r for r in records if r.kind == EVENT and r.data["event"] == GOODPUT_EVENT]
    texts = [r for r in records if r.kind == TEXT and r.data["tag"] == GOODPUT_TEXT]
    assert len(ends) == len(texts) == 2 and [r.step for r in texts] == [4, 5]
    final = ends[-1].data
    start = next(r for r in records if r.kind == EVENT and r.data["event"] == "start")
    wall = (ends[-1].ts_ms - start.data.get("process_start_ms", start.ts_ms)) / 1000
    assert sum(final[n] for n in CHARGED) == pytest.approx(wall, abs=0.01)
    assert final[LOST] >= 2 * STEP_S * 0.9  # steps 3 and 4, trained again (a sleep lasts at least its time)
    assert final[PRODUCTIVE] >= 3 * STEP_S * 0.9  # steps 2, 4 and 5 (step 1 ends the start-up)
    assert final[GAP] >= 0 and final[SAVE] >= 0 and final[LOAD] >= 0
    err = capsys.readouterr().err
    assert "(1 attempt)" in err and "(2 attempts)" in err
    assert texts[-1].data["text"] in err


def test_the_figures_are_worked_out_on_the_hubs_thread(tmp_path, monkeypatch):
    from primus.tracking.goodput import feed as goodput_feed

    threads = []
    observe = goodput_feed.Goodput.observe

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        return observe(self, *args, **kwargs)

    monkeypatch.setattr(goodput_feed.Goodput, "observe", spy)
    attempt(tmp_path, [1, 2])
    assert threads and set(threads) == {"primus-tracking-hub"}


def test_the_start_record_says_when_the_process_and_the_slurm_job_began():
    import psutil

    fields = attempt_start_fields({"SLURM_JOB_START_TIME": "1700000000"})
    assert fields.keys() == {"process_start_ms", "job_start_ms"} and fields["job_start_ms"] == 1700000000000
    # this process's start, to a clock tick (psutil's is up to a second early: it adds the boot time in whole seconds)
    assert psutil.Process().create_time() - 1.02 <= fields["process_start_ms"] / 1000 <= time.time()
    assert abs(fields["process_start_ms"] / 1000 - process_start_s()) < 0.01
    assert "job_start_ms" not in attempt_start_fields({"SLURM_JOB_START_TIME": "soon"})


def test_a_failure_in_the_accounting_costs_the_step_only_its_figures(tmp_path, monkeypatch, caplog):
    from primus.tracking.goodput import feed as goodput_feed

    def broken(self, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(goodput_feed.Goodput, "observe", broken)
    monkeypatch.setattr(goodput_feed.Goodput, "figures", broken)
    attempt(tmp_path, [1, 2])  # and its end: no breakdown, the run still ends
    assert [(r.step, dict(r.data)) for r in read_all(tmp_path) if r.kind == METRICS] == [(1, {"loss": 1.0}),
                                                                                          (2, {"loss": 1.0})]
    assert caplog.text.count("goodput figures could not be worked out") == 1
    assert [r.data["status"] for r in read_all(tmp_path) if r.kind == EVENT and r.data["event"] == "end"] == [
        "FINISHED"]


def test_the_runs_goodput_windows_name_its_recent_figures(tmp_path):
    run = start_run(TrackingConfig(run_dir=tmp_path, delivery="thread", goodput_windows=(30, 7200)))
    for step in (1, 2):
        run.log(step, {"loss": 1.0})
    run.flush(10)
    run.finish()
    steps = [r for r in read_all(tmp_path) if r.kind == METRICS]
    recent = {name for r in steps for name in r.data if name.startswith("goodput/productive_fraction_")}
    assert recent == {"goodput/productive_fraction_30s", "goodput/productive_fraction_7200s"}
