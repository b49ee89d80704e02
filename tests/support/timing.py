"""Time bounds that hold on a loaded machine: each is what the code under test was configured to wait (a
request timeout, an exit deadline), a fraction of it when the point is not to wait it, plus what the same work
took without the fault, measured in the same test under the same load. Never a fixed number of milliseconds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

LOAD_FACTOR = 5.0  # how much slower the same work may be a moment later on a busy 2-core box


def p99(costs: list[float]) -> float:
    return sorted(costs)[int(len(costs) * 0.99)]


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(fn's result, its wall time in seconds)."""
    t = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - t


def within(waited_s: float, configured_s: float, baseline_s: float) -> bool:
    """The configured wait plus the measured cost of the same work without the fault, with room for load."""
    return waited_s < configured_s + LOAD_FACTOR * baseline_s + 1.0


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` when ``timeout_s`` passed first."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)
