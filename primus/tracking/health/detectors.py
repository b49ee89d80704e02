"""Run health, as pure logic: detectors fed the run's journal records and the time, returning ``Alert``s (``stalled``
and ``resumed``, ``nan``, ``loss_spike``, ``throughput_drop``, ``straggler`` and ``straggler_resolved``).

Nothing here reads a file, a clock or a tracker: the health watch (``watch.py``) follows the journal, hands every
record and the wall-clock time in, and sends what comes out. So the detectors never run on the training thread, and
tests drive them with made-up times. docs/tracking-internals.md#run-health gives each detector's rule.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque
from collections.abc import Iterable, Mapping

from primus.tracking.journal import records as journal
from primus.tracking.journal.records import Alert, AlertKind, Record, ends_pause
from primus.tracking.settings.config import HealthSettings
from primus.upstreams import backends

# What "the loss" and "the throughput" are called in each backend's journal: the one place that knows.
THROUGHPUT_METRICS = ("perf/tokens_per_sec",)  # tracking/measure/perf.py, the same in every backend

MAX_INTERVALS = 1000  # the step intervals the median is taken over (the latest)
# the straggler figures (tracking/measure/stragglers.py), at the log steps where every rank's busy time is gathered
SLOWEST_RANK, SLOWEST_OVER_MEDIAN = "straggler/slowest_rank", "straggler/slowest_over_median"
BUSY_MAX, BUSY_MEDIAN = "straggler/busy_s_max", "straggler/busy_s_median"
SLOWEST_DATA_WAIT = "straggler/slowest_data_wait_s"
STRAGGLER_STEPS = 5  # a straggler: the same rank the slowest on most (3) of the latest 5 log steps with the figures,
STRAGGLER_RATIO = 1.2  # at this many times the median busy time or more,
STRAGGLER_MIN_LEAD_S = 0.25  # and this far ahead of it over the log interval: less is a busy host's noise
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


class StragglerWatch:
    """A rank that is the slowest, far above the median, on most recent log steps: told once per episode, and
    again when it is over."""

    def __init__(self) -> None:
        self.recent: deque[int | None] = deque(maxlen=STRAGGLER_STEPS)  # the slow rank at each log step, if one
        self.hosts: list[str] = []  # by rank (journal.RANK_HOSTS)
        self.rank: int | None = None  # the straggler told of, while its episode lasts
        self.since = 0  # the iteration it was told at

    def figures(self, data: Mapping[str, float], step: int, at: float) -> Alert | None:
        rank, ratio = data.get(SLOWEST_RANK), data.get(SLOWEST_OVER_MEDIAN)
        if not isinstance(rank, int | float) or not math.isfinite(rank):
            return None
        slow = isinstance(ratio, int | float) and ratio >= STRAGGLER_RATIO and _lead_s(data) >= STRAGGLER_MIN_LEAD_S
        self.recent.append(int(rank) if slow else None)
        most = STRAGGLER_STEPS // 2 + 1
        if self.rank is not None:
            if self.recent.count(self.rank) >= most:
                return None
            over, self.rank = self.rank, None
            return Alert(
                AlertKind.STRAGGLER_RESOLVED,
                step,
                f"rank {self.named(over)} is no longer the slowest on most of the last {STRAGGLER_STEPS} log steps "
                f"(a straggler since iteration {self.since})",
                at,
            )
        counted = Counter(r for r in self.recent if r is not None).most_common(1)
        if not counted or counted[0][1] < most:
            return None
        self.rank, self.since = counted[0][0], step
        return Alert(
            AlertKind.STRAGGLER,
            step,
            f"rank {self.named(self.rank)} is the slowest at {STRAGGLER_RATIO:g}x the median busy time or more on "
            f"{counted[0][1]} of the last {len(self.recent)} log steps ({float(ratio or 0):.2f}x at iteration {step})"
            f"{_cause(data)}",
            at,
        )

    def named(self, rank: int) -> str:
        return f"{rank} ({self.hosts[rank]})" if 0 <= rank < len(self.hosts) else str(rank)


def _lead_s(data: Mapping[str, float]) -> float:
    """The slowest rank's busy seconds over the median's (infinite where the figures do not say)."""
    top, median = data.get(BUSY_MAX), data.get(BUSY_MEDIAN)
    return top - median if isinstance(top, int | float) and isinstance(median, int | float) else math.inf


def _cause(data: Mapping[str, float]) -> str:
    """Which dominates the slow rank's busy time, where its data wait is known: waiting for batches, or the rest."""
    waited, busy = data.get(SLOWEST_DATA_WAIT), data.get(BUSY_MAX)
    if not isinstance(waited, int | float) or not isinstance(busy, int | float) or busy <= 0:
        return ""
    share = min(1.0, max(0.0, waited / busy))
    dominant = "waiting for data" if share > 0.5 else "compute and the rest, not waiting for data"
    return f"; {share:.0%} of its busy time is data wait: {dominant}"


class HealthMonitor:
    """Every detector of one run: ``observe`` each journal record, ``check`` the clock now and then."""

    def __init__(self, settings: HealthSettings, now: float):
        self.stall = StallWatch(settings)
        self.stall.start(now)
        self.loss = LossWatch(settings)
        self.throughput = ThroughputWatch(settings)
        self.stragglers = StragglerWatch()
        self.ended = False

    def prime(self, records: Iterable[Record]) -> None:
        """Take in records an earlier watch of this run judged (a delivery process started again after one died):
        the state they leave — the last step and the intervals before it, a save in progress, the loss window, a
        stall already told — without raising their alerts again."""
        for record in records:
            if isinstance(told := journal.event_of(record), Alert) and told.kind == AlertKind.STALLED:
                self.stall.stalled_since = self.stall.last_step_at or self.stall.watch_from
            else:
                self.observe(record)

    def observe(self, record: Record) -> list[Alert]:
        if self.ended:
            return []
        at = record.ts_ms / 1000.0
        match journal.event_of(record):
            case journal.NamedEvent(journal.END_EVENT):
                self.ended = True
            case journal.Busy(_, on, after_step):
                self.stall.busy(on, at, after_step)
            case journal.CheckpointSaved():  # a checkpoint's own records (journal/records.py) mark its save
                self.stall.busy(False, at)
            case journal.NamedEvent(name) if name in (journal.SAVE_START, journal.SAVED):
                self.stall.busy(name == journal.SAVE_START, at)
            case journal.NamedEvent(journal.RANK_HOSTS, {"hosts": list(hosts)}):
                self.stragglers.hosts = [str(host) for host in hosts]
            # a record for some sinks only is another axis (Megatron's "vs samples")
            case journal.Metrics(values) if record.only is None:
                return self._step(record.step, values, at)
        return []

    def _step(self, step: int, values: Mapping[str, float], at: float) -> list[Alert]:
        found = [self.stall.step(step, at)]
        if (loss := first_of(loss_metrics(), values)) is not None:
            found.append(self.loss.loss(*loss, step, at))
        if (throughput := first_of(THROUGHPUT_METRICS, values)) is not None:
            found.append(self.throughput.throughput(*throughput, step, at))
        found.append(self.stragglers.figures(values, step, at))
        return [a for a in found if a is not None]

    def check(self, now: float) -> list[Alert]:
        if self.ended:
            return []
        alert = self.stall.check(now)
        return [alert] if alert is not None else []
