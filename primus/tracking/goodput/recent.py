"""Goodput of the run's recent past, as pure arithmetic beside the whole-run accounting (``accounting.py``): the
productive share of the last W seconds (``goodput/productive_fraction_<W>s``), and the time lost to steps slower
than an ideal step time, median + 3 × MAD of the recent steps (Google's ml-goodput-measurement rule), so a run that
has been slow since some hour shows as one chart. docs/tracking-internals.md#goodput-and-badput says more.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass

SLOW, DEVIATION = "badput/slow_steps_s", "perf/step_time_deviation"
IDEAL_STEPS = 100  # the latest log intervals the ideal step time is taken over
IDEAL_MADS = 3.0


def window_name(seconds: int) -> str:
    return f"goodput/productive_fraction_{seconds}s"


@dataclass(frozen=True)
class Span:
    """One log interval's productive seconds, spread evenly over its wall time ``start``..``end``."""

    step: int
    productive: float
    start: float
    end: float

    def within(self, since: float) -> float:
        """Its productive seconds after ``since``."""
        if self.end <= since or self.end <= self.start:
            return 0.0
        return self.productive * (self.end - max(self.start, since)) / (self.end - self.start)


def recent_productive(spans: list[Span], since: float) -> float:
    """Productive seconds after ``since`` of ``spans`` (in time order, apart), read from the latest back."""
    total = 0.0
    for span in reversed(spans):
        if span.end <= since:
            break
        total += span.within(since)
    return total


def window_fractions(spans: list[Span], windows: tuple[int, ...], first_start: float, now: float) -> dict[str, float]:
    """Each window's productive share of its seconds: the last W seconds, or the whole run when it is shorter."""
    out = {}
    for seconds in windows:
        since = max(first_start, now - seconds)
        length = now - since
        out[window_name(seconds)] = round(min(1.0, recent_productive(spans, since) / length), 4) if length > 0 else 0.0
    return out


def ideal_step_s(step_times: deque[float] | list[float]) -> float:
    """Median + IDEAL_MADS × the median absolute deviation of the step times."""
    median = statistics.median(step_times)
    return median + IDEAL_MADS * statistics.median(abs(t - median) for t in step_times)


class SlowSteps:
    """Each log interval's seconds per step against the ideal over the latest intervals, this one included (two
    steps cannot make one of them slow; three can)."""

    def __init__(self) -> None:
        self.step_times: deque[float] = deque(maxlen=IDEAL_STEPS)
        self.slow_s = 0.0  # cumulative: seconds of steps above the ideal
        self.deviation: float | None = None  # the latest interval's step time over the ideal; None: not measured

    def interval(self, seconds: float | None, iterations: int) -> None:
        """A log interval of ``iterations`` steps that took ``seconds`` of step time (None: not measured)."""
        self.deviation = None
        if seconds is None or iterations < 1 or seconds <= 0:
            return
        per_step = seconds / iterations
        self.step_times.append(per_step)
        ideal = ideal_step_s(self.step_times)
        self.deviation = per_step / ideal
        self.slow_s += max(0.0, per_step - ideal) * iterations
