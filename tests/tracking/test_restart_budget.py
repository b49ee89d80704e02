"""The bound on restarting a delivery process that died (delivery/restarts.py): never more than the limit within
any window, and the budget comes back as the window moves on."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from primus.tracking.delivery.restarts import RestartBudget


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_process_dying_as_it_starts_is_restarted_limit_times_then_not():
    clock = Clock()
    budget = RestartBudget(limit=5, window_s=600.0, clock=clock)
    taken = []
    for _ in range(20):
        clock.now += 0.5  # dies half a second after each start
        taken.append(budget.take())
    assert taken == [True] * 5 + [False] * 15
    assert budget.used == 5


def test_the_budget_comes_back_once_the_window_has_passed_the_earliest_restart():
    clock = Clock()
    budget = RestartBudget(limit=2, window_s=10.0, clock=clock)
    assert budget.take() and budget.take() and not budget.take()
    clock.now = 9.999
    assert not budget.take()
    clock.now = 5.0
    assert not budget.take()
    clock.now = 10.0  # both restarts at 0 are a window old
    assert budget.take() and budget.take() and not budget.take()
    assert budget.used == 4


@given(st.lists(st.floats(min_value=0.0, max_value=50.0), max_size=60), st.integers(1, 6), st.floats(0.1, 30.0))
def test_never_more_than_the_limit_within_any_window(gaps, limit, window):
    clock = Clock()
    budget = RestartBudget(limit=limit, window_s=window, clock=clock)
    taken = []
    for gap in gaps:
        clock.now += gap
        if budget.take():
            taken.append(clock.now)
    assert budget.used == len(taken)
    for i, start in enumerate(taken):
        assert sum(1 for t in taken[i:] if t - start < window) <= limit
