"""The writing rank's figures over ranks handed to the hub's thread (primus.tracking.measure.gathered): made when
first read, waiting a bounded time for the channel's thread, and not waiting again once a wait timed out."""

from __future__ import annotations

import threading
import time

from primus.tracking.measure.gathered import NONE, Gathered, GatheredSteps, Previous


def test_a_take_waits_for_the_step_put_by_another_thread():
    steps = GatheredSteps(wait_s=30.0)
    later = threading.Timer(0.05, steps.put, args=(1, ({"a": 1.0}, {"s": 2.0})))
    later.start()
    assert steps.take(1) == ({"a": 1.0}, {"s": 2.0})
    later.join()


def test_an_older_step_than_one_taken_is_not_waited_for():
    steps = GatheredSteps(wait_s=30.0)
    steps.put(3, ({"a": 3.0}, {}))
    assert steps.take(3) == ({"a": 3.0}, {})
    assert steps.take(2) == NONE  # its figures were dropped with the newer take: no 30 s wait


def test_a_step_that_never_comes_is_given_up_within_the_bound_and_the_next_take_does_not_wait():
    steps = GatheredSteps(wait_s=1.0)
    started = time.monotonic()
    assert steps.take(0) == NONE
    assert time.monotonic() - started >= 1.0
    started = time.monotonic()
    assert steps.take(1) == NONE
    assert time.monotonic() - started < 1.0  # behind: no wait (the channel stopped, or is late)
    steps.put(2, ({"a": 2.0}, {}))
    assert steps.take(2) == ({"a": 2.0}, {})  # in on time: waits again from here on


def test_the_figures_are_made_once_when_first_read_and_shared_by_both_mappings():
    steps = GatheredSteps(wait_s=30.0)
    previous = Previous(steps, 4)
    system = Gathered(lambda: {"own": 1.0} | previous.figures()[0])
    stragglers = Gathered(lambda: previous.figures()[1])
    steps.put(4, ({"mem/x/max": 3.0}, {"straggler/slowest_rank": 2.0}))
    assert dict(system) == {"own": 1.0, "mem/x/max": 3.0} and dict(stragglers) == {"straggler/slowest_rank": 2.0}
    assert dict(stragglers) == {"straggler/slowest_rank": 2.0}  # taken once: a second take would find nothing
