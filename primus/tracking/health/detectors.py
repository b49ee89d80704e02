"""Run health, as pure logic: detectors fed the run's journal records and the time, returning ``Alert``s (``stalled``
and ``resumed``, ``nan``, ``loss_spike``, ``throughput_drop``).

Nothing here reads a file, a clock or a tracker: the health watch (``watch.py``) follows the journal, hands every
record and the wall-clock time in, and sends what comes out. So the detectors never run on the training thread, and
tests drive them with made-up times. docs/tracking-internals.md#run-health gives each detector's rule.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable, Mapping

from primus.tracking.journal.records import (
    BUSY_EVENT,
    END_EVENT,
    EVENT,
    METRICS,
    SAVE_START,
    SAVED,
    Alert,
    AlertKind,
    Record,
    alert_of,
    ends_pause,
)
from primus.tracking.settings.config import HealthSettings
from primus.upstreams import backends

# What "the loss" and "the throughput" are called in each backend's journal: the one place that knows.
THROUGHPUT_METRICS = ("perf/tokens_per_sec",)  # tracking/measure/perf.py, the same in every backend

MAX_INTERVALS = 1000  # the step intervals the median is taken over (the latest)
SPIKE_MIN_REL = 0.01  # the MAD taken as at least this fraction of the median


def loss_metrics() -> tuple[str, ...]:
    """The names upstream trainers log their loss by (each backend's ``LOSS``)."""
    return backends.metric_names(backends.LOSS)


def first_of(names: tuple[str, ...], data: Mapping[str, float]) -> tuple[str, float] | None:
    for name in names:
        if name in data:
            return name, data[name]
    return None


class StallWatch:
    """Silence between log steps, judged against the allowance."""

    def __init__(self, settings: HealthSettings):
        self.settings = settings
        self.intervals: deque[float] = deque(maxlen=MAX_INTERVALS)
        self.last_step: int | None = None
        self.last_step_at: float | None = None
        self.watch_from: float | None = None  # set by ``start``: when the start-up allowance began
        self.busy_since: float | None = None
        self.busy_after: int | None = None  # the step whose log may come during the pause without ending it
        self.stalled_since: float | None = None  # the last step's time, while a stall is alerted

    def start(self, now: float) -> None:
        self.watch_from = now

    def allowance(self) -> float:
        s = self.settings
        if self.last_step_at is None:
            return s.startup_s
        if s.stall_after_s is not None:
            return s.stall_after_s
        median = statistics.median(self.intervals) if self.intervals else 0.0
        return max(s.stall_min_s, s.stall_factor * median)

    def step(self, step: int, at: float) -> Alert | None:
        if self.last_step is not None and step <= self.last_step:
            return None  # a second record of the same step (an x-axis for one tracker), or a rewind
        resumed = None
        if self.stalled_since is not None:
            gap = at - self.stalled_since
            resumed = Alert(AlertKind.RESUMED, step, f"steps again after {gap:.0f} s without one", at)
            self.stalled_since = None
        if self.last_step_at is not None:
            self.intervals.append(max(0.0, at - self.last_step_at))
        self.last_step, self.last_step_at = step, at
        if ends_pause(step, self.busy_after):  # the save or evaluation is over, whether or not its end was marked
            self.busy_since = None
        return resumed

    def busy(self, on: bool, at: float, after_step: int | None = None) -> None:
        self.busy_since, self.busy_after = (at, after_step) if on else (None, None)

    def check(self, now: float) -> Alert | None:
        if self.stalled_since is not None or self.watch_from is None:
            return None
        since = self.last_step_at if self.last_step_at is not None else self.watch_from
        allowed = self.allowance()
        if self.busy_since is not None:
            allowed = max(allowed, self.busy_since - since + self.settings.busy_s)
        silent = now - since
        if silent <= allowed:
            return None
        self.stalled_since = since
        where = f"after step {self.last_step}" if self.last_step is not None else "since the run started"
        return Alert(
            AlertKind.STALLED,
            self.last_step or 0,
            f"no step for {silent:.0f} s {where} (allowed {allowed:.0f} s)",
            now,
        )


class LossWatch:
    """A loss that is not finite, or far above its recent median."""

    def __init__(self, settings: HealthSettings):
        self.settings = settings
        self.recent: deque[float] = deque(maxlen=settings.spike_window)

    def loss(self, name: str, value: float, step: int, at: float) -> Alert | None:
        if not math.isfinite(value):
            return Alert(AlertKind.NAN, step, f"{name} is {value} at iteration {step}", at)
        alert = None
        k = self.settings.spike_k
        if k > 0 and len(self.recent) >= self.settings.spike_window // 2:
            median = statistics.median(self.recent)
            mad = statistics.median(abs(x - median) for x in self.recent)
            # a floor: a loss flat to the last digit has no MAD, and the least rise would be a spike
            if value > median + k * max(mad, SPIKE_MIN_REL * abs(median)):
                alert = Alert(
                    AlertKind.LOSS_SPIKE,
                    step,
                    f"{name} {value:.4g} at iteration {step}, recent median {median:.4g} (MAD {mad:.3g})",
                    at,
                )
        self.recent.append(value)
        return alert


class ThroughputWatch:
    """Throughput below a fraction of the run's median for several log steps in a row."""

    def __init__(self, settings: HealthSettings):
        self.settings = settings
        self.values: deque[float] = deque(maxlen=MAX_INTERVALS)
        self.low = 0  # log steps in a row below the bar
        self.alerted = False

    def throughput(self, name: str, value: float, step: int, at: float) -> Alert | None:
        s = self.settings
        if not math.isfinite(value) or s.drop_fraction == 0:
            return None
        alert = None
        if len(self.values) >= s.drop_steps * 3:
            median = statistics.median(self.values)
            self.low = self.low + 1 if value < s.drop_fraction * median else 0
            if self.low == 0:
                self.alerted = False
            elif self.low >= s.drop_steps and not self.alerted:
                self.alerted = True
                alert = Alert(
                    AlertKind.THROUGHPUT_DROP,
                    step,
                    f"{name} {value:.4g} at iteration {step}, under {s.drop_fraction:g} × the run's median "
                    f"{median:.4g} for {self.low} log steps",
                    at,
                )
        self.values.append(value)
        return alert


class HealthMonitor:
    """Every detector of one run: ``observe`` each journal record, ``check`` the clock now and then."""

    def __init__(self, settings: HealthSettings, now: float):
        self.stall = StallWatch(settings)
        self.stall.start(now)
        self.loss = LossWatch(settings)
        self.throughput = ThroughputWatch(settings)
        self.ended = False

    def prime(self, records: Iterable[Record]) -> None:
        """Take in records an earlier watch of this run judged (a delivery process started again after one died):
        the state they leave — the last step and the intervals before it, a save in progress, the loss window, a
        stall already told — without raising their alerts again."""
        for record in records:
            if (told := alert_of(record)) is not None and told.kind == AlertKind.STALLED:
                self.stall.stalled_since = self.stall.last_step_at or self.stall.watch_from
            else:
                self.observe(record)

    def observe(self, record: Record) -> list[Alert]:
        if self.ended:
            return []
        at = record.ts_ms / 1000.0
        if record.kind == EVENT:
            event = record.data.get("event")
            if event == END_EVENT:
                self.ended = True
            elif event == BUSY_EVENT:
                self.stall.busy(bool(record.data.get("on")), at, record.data.get("after_step"))
            elif event in (SAVE_START, SAVED):  # a checkpoint's own records (journal/records.py) mark its save
                self.stall.busy(event == SAVE_START, at)
            return []
        if record.kind != METRICS or record.only is not None:  # for some sinks: another axis (Megatron's "vs samples")
            return []
        found = [self.stall.step(record.step, at)]
        if (loss := first_of(loss_metrics(), record.data)) is not None:
            found.append(self.loss.loss(*loss, record.step, at))
        if (throughput := first_of(THROUGHPUT_METRICS, record.data)) is not None:
            found.append(self.throughput.throughput(*throughput, record.step, at))
        return [a for a in found if a is not None]

    def check(self, now: float) -> list[Alert]:
        if self.ended:
            return []
        alert = self.stall.check(now)
        return [alert] if alert is not None else []
