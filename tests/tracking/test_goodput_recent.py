"""Goodput over recent windows and slow steps (primus/tracking/goodput/recent.py), through the accounting with
made-up times: a window never holds more than the run's wall time, its fraction stays in [0, 1], and the ideal
step time is median + 3 × MAD of the recent steps."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from primus.tracking.goodput.accounting import FRACTION, PRODUCTIVE, SLOW, Goodput
from primus.tracking.goodput.recent import (
    DEVIATION,
    IDEAL_STEPS,
    SlowSteps,
    ideal_step_s,
    recent_productive,
    window_name,
)
from primus.tracking.journal.records import EVENT, LOADED, METRICS

WINDOWS = (5, 60, 300)

# one run as (gap before the record, what it is): a log step, a busy mark on or off, a restart that loads iteration 1
ACTIONS = st.lists(
    st.tuples(
        st.integers(0, 12000).map(lambda centis: centis / 100),  # seconds, to the hundredth
        st.sampled_from(["step", "step", "step", "busy on", "busy off", "restart"]),
        st.floats(0.0, 1.0),  # a data wait share of the step's interval
    ),
    max_size=40,
)


def replay(actions) -> Iterator[tuple[Goodput, float]]:
    """The accounting of ``actions`` from t=0, after each record and 1000 s after the last."""
    g, now, step = Goodput(windows=WINDOWS), 0.0, 0
    g.observe(EVENT, 0, now, {"event": "start"})
    for gap, what, wait in actions:
        now += gap
        if what == "step":
            step += 1
            g.observe(METRICS, step, now, {"batch-generator-time": wait * gap})
        elif what == "restart":
            g.observe(EVENT, 0, now, {"event": "start"})
            g.observe(EVENT, 0, now, {"event": LOADED, "iteration": 1, "seconds": 0.0})
            step = 1
        else:
            g.observe(EVENT, 0, now, {"event": "busy", "what": "evaluation", "on": what == "busy on"})
        yield g, now
    yield g, now + 1000.0


@settings(max_examples=200, deadline=None)
@given(ACTIONS)
def test_a_window_never_holds_more_than_the_run_and_its_fraction_is_a_fraction(actions):
    for g, now in replay(actions):
        figures = g.figures(now)
        wall = g.wall_s(now)
        for seconds in WINDOWS:
            assert 0.0 <= figures[window_name(seconds)] <= 1.0
            productive = recent_productive(g.kept, max(0.0, now - seconds))
            assert productive <= min(seconds, wall) + 1e-6  # a window never exceeds the run's wall time
            assert productive <= figures[PRODUCTIVE] + 1e-3  # nor its productive time
            if seconds >= wall:  # a window as long as the run: the whole run's fraction
                assert figures[window_name(seconds)] == pytest.approx(figures[FRACTION], abs=2e-4)
        assert figures[SLOW] >= 0.0


def test_the_window_is_the_last_seconds_and_the_run_when_shorter():
    g = Goodput(windows=(10, 100))
    g.observe(EVENT, 0, 0.0, {"event": "start"})
    g.observe(METRICS, 1, 20.0, {})  # 20 s of start-up
    g.observe(METRICS, 2, 30.0, {})  # 10 s productive
    g.observe(EVENT, 0, 30.0, {"event": "busy", "what": "evaluation", "on": True})
    g.observe(EVENT, 0, 35.0, {"event": "busy", "what": "evaluation", "on": False})
    g.observe(METRICS, 3, 40.0, {})  # 5 s productive after 5 s of evaluation
    figures = g.figures(40.0)
    assert figures[window_name(10)] == pytest.approx(0.5)  # the interval 30..40: its 5 productive s spread over 10
    assert figures[window_name(100)] == pytest.approx(15 / 40)  # the run is 40 s long: all of it
    assert g.figures(45.0)[window_name(10)] == pytest.approx(2.5 / 10)  # 5 s later, half the interval left


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=2 * IDEAL_STEPS))
def test_the_ideal_is_median_plus_three_mads_of_the_recent_steps(step_times):
    slow = SlowSteps()
    for seconds in step_times:
        slow.interval(seconds * 2, 2)  # two steps an interval
    recent = step_times[-IDEAL_STEPS:]
    median = statistics.median(recent)
    ideal = median + 3 * statistics.median(abs(t - median) for t in recent)
    assert ideal_step_s(slow.step_times) == pytest.approx(ideal)
    assert slow.deviation == pytest.approx(step_times[-1] / ideal)
    assert 0.0 <= slow.slow_s <= 2 * sum(step_times)


def test_one_slow_interval_among_steady_ones_counts_its_time_above_the_ideal():
    slow = SlowSteps()
    for _ in range(10):
        slow.interval(5.0, 5)  # 1 s a step
    assert slow.slow_s == 0.0 and slow.deviation == 1.0
    slow.interval(15.0, 5)  # 3 s a step: median 1, MAD 0, so the ideal stays 1 s
    assert slow.deviation == pytest.approx(3.0) and slow.slow_s == pytest.approx(10.0)
    slow.interval(None, 5)  # not measured: no deviation, nothing added
    assert slow.deviation is None and slow.slow_s == pytest.approx(10.0)


def test_two_steps_cannot_make_one_slow():
    slow = SlowSteps()
    slow.interval(1.0, 1)
    slow.interval(100.0, 1)
    assert slow.slow_s == 0.0  # median 50.5, MAD 49.5: the ideal is above both


def test_the_deviation_joins_a_measured_interval_only():
    g = Goodput()
    g.observe(EVENT, 0, 0.0, {"event": "start"})
    g.observe(METRICS, 1, 10.0, {})  # start-up only: no step time
    assert g.step_figures() == {}
    g.observe(METRICS, 2, 11.0, {})
    assert g.step_figures() == {DEVIATION: 1.0}


def test_an_interval_with_a_pause_is_not_judged():
    """Its steps' time is partly in the evaluation (MaxText's mark covers the next training step): not a step time."""
    g = Goodput()
    g.observe(EVENT, 0, 0.0, {"event": "start"})
    g.observe(METRICS, 1, 10.0, {})
    g.observe(METRICS, 2, 11.0, {})
    g.observe(EVENT, 0, 11.0, {"event": "busy", "what": "evaluation", "on": True})
    g.observe(METRICS, 3, 15.0, {})  # the evaluation's end unmarked: the log step ends it
    assert g.step_figures() == {} and list(g.slow.step_times) == [1.0]
    g.observe(METRICS, 4, 16.0, {})
    assert g.step_figures() == {DEVIATION: 1.0}
    g.observe(EVENT, 0, 16.5, {"event": "busy", "what": "evaluation", "on": True, "after_step": 5})
    g.observe(METRICS, 5, 17.0, {})  # logged late, during the evaluation: it goes on (MaxText's)
    g.observe(METRICS, 6, 20.0, {})  # the interval all evaluation: not judged either
    assert g.step_figures() == {} and list(g.slow.step_times) == [1.0, 1.0]
