"""Goodput accounting (primus/tracking/goodput/accounting.py) with made-up times: every second charged once."""

from __future__ import annotations

import pytest

from primus.tracking.goodput.accounting import (
    CHARGED,
    DATA_WAIT,
    EVAL,
    FRACTION,
    GAP,
    LOAD,
    LOST,
    OTHER,
    PRODUCTIVE,
    SAVE,
    STARTUP,
    Goodput,
    breakdown,
)
from primus.tracking.journal.records import EVENT, LOADED, METRICS, SAVE_START, SAVED


def start(g: Goodput, at: float, **fields) -> None:
    g.observe(EVENT, 0, at, {"event": "start", **fields})


def started(at: float, **fields) -> Goodput:
    """The accounting of a run whose first attempt starts at ``at``."""
    g = Goodput()
    start(g, at, **fields)
    return g


def event(g: Goodput, at: float, name: str, **fields) -> None:
    g.observe(EVENT, 0, at, {"event": name, **fields})


def step(g: Goodput, at: float, n: int, **metrics) -> bool:
    return g.observe(METRICS, n, at, metrics)


def checked(g: Goodput, now: float) -> dict[str, float]:
    """The figures at ``now``, which add up to the wall time so far."""
    figures = g.figures(now)
    assert sum(figures[name] for name in CHARGED) == pytest.approx(g.wall_s(now), abs=0.01)
    return figures


def test_one_attempt_splits_its_time_into_startup_steps_evaluation_save_and_teardown():
    g = started(100.0)
    step(g, 110.0, 1)  # 10 s of start-up
    step(g, 112.0, 2)
    event(g, 112.5, "busy", what="evaluation", on=True)
    event(g, 115.5, "busy", what="evaluation", on=False)
    event(g, 115.5, SAVE_START, iteration=2)
    event(g, 117.5, SAVED, iteration=2)
    step(g, 119.5, 3)  # 2.5 s of steps between the save's end and here, 0.5 s before the evaluation
    event(g, 121.0, "end", status="FINISHED")
    figures = checked(g, 121.0)
    assert figures[STARTUP] == 10.0
    assert figures[PRODUCTIVE] == 2.0 + 0.5 + 2.0
    assert figures[EVAL] == 3.0 and figures[SAVE] == 2.0
    assert figures[OTHER] == 1.5  # after the last step: teardown
    assert figures[FRACTION] == pytest.approx(4.5 / 21.0, abs=1e-4)


def test_a_restart_from_a_checkpoint_loses_the_steps_after_it_and_counts_the_gap():
    g = started(0.0, job_start_ms=-5000)
    for n in range(1, 5):
        step(g, 10.0 + n, n)
    event(g, 14.0, SAVE_START, iteration=4)
    event(g, 15.0, SAVED, iteration=4)
    step(g, 16.0, 5)
    step(g, 17.0, 6)
    step(g, 17.4, 7)  # ...then SIGKILLed at 17.5: its last record is step 7
    start(g, 30.0, process_start_ms=25000)  # the next attempt's process began at 25 s
    event(g, 33.0, LOADED, iteration=4, seconds=1.0)
    step(g, 35.0, 5)
    figures = checked(g, 35.0)
    assert g.wall_s(35.0) == 40.0  # from the Slurm job's start
    assert figures[GAP] == pytest.approx(25.0 - 17.4)
    assert figures[LOST] == pytest.approx(1.0 + 1.0 + 0.4)  # steps 5, 6 and 7 were computed again
    assert figures[LOAD] == 1.0
    # the job's start -> step 1; the process's start -> the load, and the load -> the attempt's first log step
    assert figures[STARTUP] == pytest.approx(16.0 + 7.0 + 2.0)
    assert figures[SAVE] == 1.0
    assert figures[PRODUCTIVE] == pytest.approx(3.0)  # steps 2-4: what was kept
    assert 0 < figures[FRACTION] < 1


def test_without_the_loaded_iteration_the_next_attempts_first_step_says_what_was_computed_again():
    g = started(0.0)
    for n in (1, 2, 3, 4):
        step(g, 1.0 + n, n)
    start(g, 10.0)
    step(g, 12.0, 3)  # resumed after step 2: steps 3 and 4 were lost
    figures = checked(g, 12.0)
    assert figures[LOST] == 2.0
    assert figures[GAP] == 5.0


def test_an_attempt_killed_between_log_steps_lost_what_it_computed_after_the_last_one():
    g = started(0.0)
    step(g, 1.0, 1)
    step(g, 2.0, 2)
    event(g, 3.5, "alert", kind="stalled")  # a record after the last step: the attempt ran until here
    start(g, 5.0)
    figures = checked(g, 5.0)
    assert figures[LOST] == 1.5 and figures[GAP] == 1.5


def test_a_finished_attempts_tail_is_other_not_lost():
    g = started(0.0)
    step(g, 1.0, 1)
    event(g, 3.0, "end", status="FINISHED")
    start(g, 4.0)
    figures = checked(g, 4.0)
    assert figures[OTHER] == 2.0 and figures[LOST] == 0.0 and figures[GAP] == 1.0


def test_the_first_interval_with_an_iteration_time_is_steps_not_startup_and_data_wait_is_carved_out():
    g = started(0.0)
    step(g, 20.0, 10, **{"perf/iteration_time_ms": 500.0})  # 10 iterations of 0.5 s: 5 s of the 20 were steps
    step(g, 25.0, 20, **{"batch-generator-time": 0.1})  # 10 iterations waiting 0.1 s each for data
    figures = checked(g, 25.0)
    assert figures[STARTUP] == 15.0
    assert figures[DATA_WAIT] == 1.0
    assert figures[PRODUCTIVE] == 5.0 + 4.0


def test_a_second_record_of_a_step_is_not_a_new_step():
    g = started(0.0)
    assert step(g, 1.0, 1)
    assert not step(g, 1.5, 1)  # evaluation scalars of the same iteration


def test_figures_between_log_steps_and_the_breakdown_line():
    g = started(0.0)
    assert g.figures(3.0)[STARTUP] == 3.0  # no step yet: all start-up
    step(g, 4.0, 1)
    figures = checked(g, 6.0)
    assert figures[OTHER] == 2.0  # not yet a step's: were the run to end now, teardown
    line = breakdown(figures, g.wall_s(6.0), g.attempts)
    assert line.startswith("[primus] goodput 0.0% of 6.0 s (1 attempt): startup 4.0 s")
    assert "other 2.0 s" in line


def test_a_start_before_the_previous_attempts_end_is_not_counted_twice():
    g = started(0.0)
    step(g, 10.0, 1)
    # a job that began before the last record: this is its restart; a process "before" it: another host's clock
    start(g, 12.0, process_start_ms=5000, job_start_ms=0)
    figures = checked(g, 12.0)
    assert figures[GAP] == 0.0 and figures[STARTUP] == 12.0


def test_a_save_still_in_progress_at_a_log_step_ends_there_and_an_unknown_pause_is_other():
    g = started(0.0)
    step(g, 1.0, 1)
    event(g, 1.0, SAVE_START, iteration=1)  # asynchronous: its record comes after the next steps
    step(g, 3.0, 2)
    event(g, 3.5, "busy", what="a user's own pause", on=True)
    event(g, 4.5, "busy", what="a user's own pause", on=False)
    step(g, 5.0, 3)
    event(g, 6.0, SAVED, iteration=1)
    step(g, 7.0, 4)
    figures = checked(g, 7.0)
    assert figures[SAVE] == 2.0 and figures[OTHER] == 1.0
    assert figures[PRODUCTIVE] == 0.5 + 0.5 + 2.0  # step 4's interval: the late save record is not a pause


def test_an_evaluation_during_which_the_step_before_it_is_logged_lasts_until_a_later_step():
    """MaxText logs a step once the next is handed over: step 2's log comes after the evaluation begun after it."""
    g = started(0.0)
    step(g, 1.0, 1)
    event(g, 2.0, "busy", what="evaluation", on=True, after_step=2)
    step(g, 2.5, 2)  # step 2's log, late: the evaluation goes on
    step(g, 2.5, 2, **{"eval/loss": 1.0})  # evaluation scalars at the same step
    step(g, 6.0, 3)  # the first step after it ends it
    figures = checked(g, 6.0)
    assert figures[EVAL] == 4.0 and figures[PRODUCTIVE] == 1.0  # step 2's interval up to the evaluation
    step(g, 7.0, 4)
    assert checked(g, 7.0)[PRODUCTIVE] == 1.0 + 1.0


def test_torchtitans_data_loading_share_is_data_wait_and_its_iteration_time_carves_startup():
    """TorchTitan logs the share of its log interval spent loading batches and its seconds per iteration
    (``time_metrics/data_loading(%)``, ``time_metrics/end_to_end(s)``): their product is each iteration's wait."""
    g = started(0.0)
    step(g, 20.0, 10, **{"time_metrics/end_to_end(s)": 0.5, "time_metrics/data_loading(%)": 10.0})
    step(g, 25.0, 20, **{"time_metrics/end_to_end(s)": 0.5, "time_metrics/data_loading(%)": 20.0})
    figures = checked(g, 25.0)
    assert figures[STARTUP] == 15.0  # the first interval's 10 iterations of 0.5 s were steps
    assert figures[DATA_WAIT] == pytest.approx(10 * 0.05 + 10 * 0.1)
    assert figures[PRODUCTIVE] == pytest.approx(5.0 - 0.5 + 5.0 - 1.0)
