"""Crash loops (primus/tracking/goodput/attempts.py): the counting of attempts without progress, on made-up outcomes;
then on real runs of one run directory, each killed outright (SIGKILL) in a child process before a new step or
checkpoint: the run that follows the set number of them is stopped with ``no_progress`` told to the webhook, the
console and the journal, ends FAILED and exits 93; the next launch trains again."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from support.journal_files import journal_lines

from primus.tracking.goodput.accounting import DISRUPTIONS, GOODPUT_EVENT
from primus.tracking.goodput.attempts import ATTEMPTS_SECTION, NO_PROGRESS_EXIT, History, Outcome, was_stopped
from primus.tracking.health.webhook import WEBHOOK_ENV
from primus.tracking.journal.run_state import RunState


def died(step=None, checkpoint=None):
    return Outcome(last_step=step, checkpoint=checkpoint, finished=False)


def run_through(outcomes, limit):
    """The history after attempts that ended as ``outcomes`` say, and the stops each start made."""
    history, stops = History(), []
    for previous in outcomes:
        history, stop = history.begin(previous, limit)
        stops.append(stop)
    return history, stops


def test_the_limit_counts_attempts_in_a_row_that_passed_neither_step_nor_checkpoint():
    history, stops = run_through([None, died(4), died(4), died(3)], limit=2)
    assert stops[:3] == [None, None, None]
    assert stops[3].step == 4 and history.stopped == history.attempts == 4
    assert stops[3].text.startswith("2 attempts in a row ended without a step beyond 4 or a checkpoint: each died at "
                                    "or before step 4;") and f"exit {NO_PROGRESS_EXIT}" in stops[3].text


@pytest.mark.parametrize(
    "progress",
    [died(5), died(2, checkpoint=2), Outcome(last_step=4, checkpoint=None, finished=True)],
    ids=["a step beyond", "a new checkpoint", "a normal end"],
)
def test_progress_of_any_kind_starts_the_count_again(progress):
    _, stops = run_through([None, died(4, checkpoint=1), died(4), progress, died(3), died(None)], limit=3)
    assert stops == [None] * 6


def test_an_attempt_dead_before_its_first_log_step_is_named_so():
    _, stops = run_through([None, died(None), died(None)], limit=2)
    assert "without a log step or a checkpoint: each died before its first log step" in stops[2].text
    assert stops[2].step == 0


def test_after_a_stop_the_next_launch_gets_its_attempts_again_and_zero_never_stops():
    history, stops = run_through([None, died(4), died(4), died(None), died(4)], limit=1)
    assert [s is not None for s in stops] == [False, False, True, False, True]
    assert history.attempts == 5
    _, never = run_through([None, *[died(4)] * 5], limit=0)
    assert never == [None] * 6


def test_an_attempt_with_nothing_journaled_to_judge_it_by_leaves_the_count_as_it_was():
    _, stops = run_through([None, died(4), died(4), None, died(4)], limit=2)
    assert [s is not None for s in stops] == [False, False, False, False, True]


def test_the_history_round_trips_through_run_json(tmp_path):
    history, _ = run_through([None, died(4), died(None)], limit=5)
    state = RunState(tmp_path)
    state.update(ATTEMPTS_SECTION, **history.__dict__)
    assert History.of(state.section(ATTEMPTS_SECTION)) == history
    assert not was_stopped(tmp_path)


CHILD = """
import os, sys
from pathlib import Path
from primus.tracking import TrackingConfig, start_run
from primus.tracking.settings.config import HealthSettings
run = start_run(TrackingConfig(run_dir=Path(sys.argv[1]), health=HealthSettings(no_progress_restarts=2)))
run.install_exit_handlers()
for step in range(1, int(sys.argv[2]) + 1):
    run.log(step, {"lm loss": 2.0})
run.flush(10)
os.kill(os.getpid(), 9)  # dies outright, as an out-of-memory kill would
"""


def attempt(run_dir, steps):
    return subprocess.run([sys.executable, "-c", CHILD, str(run_dir), str(steps)], capture_output=True, text=True,
                          timeout=120)


def test_killed_attempts_without_progress_stop_the_next_with_no_progress(tmp_path, monkeypatch, webhook_receiver):
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    run_dir = tmp_path / "run"
    assert [attempt(run_dir, steps).returncode for steps in (3, 3, 2)] == [-signal.SIGKILL] * 3
    stopped = attempt(run_dir, 5)
    assert stopped.returncode == NO_PROGRESS_EXIT, stopped.stderr
    assert "[primus] ALERT no_progress run run iteration 3: 2 attempts in a row" in stopped.stderr
    [told] = [body for body in webhook_receiver.bodies if body["kind"] == "no_progress"]
    assert told["iteration"] == 3 and "died at or before step 3" in told["text"]
    lines = journal_lines(run_dir)
    journaled = [r["d"] for r in lines if r["k"] == "e" and r["d"].get("event") == "alert"]
    assert [a["kind"] for a in journaled][-2:] == ["no_progress", "failed"]
    assert RunState(run_dir).section("run")["status"] == "FAILED" and was_stopped(run_dir)
    [end] = [r["d"] for r in lines if r["k"] == "e" and r["d"].get("event") == GOODPUT_EVENT]
    assert end[DISRUPTIONS] == 3  # the stopped attempt is the fourth
    assert attempt(run_dir, 4).returncode == -signal.SIGKILL  # launched again: it trains
    assert not was_stopped(run_dir)
    steps = {r["s"]: r["d"][DISRUPTIONS] for r in journal_lines(run_dir) if r["k"] == "m"}
    assert steps == {1: 0, 2: 0, 3: 0, 4: 4}  # each step journaled once, with the restarts before it
