"""Goodput and badput of a run directory across its attempts, as pure accounting: fed the journal's records (or
the same values as they are logged) with their times, it splits the run's wall time, from the first attempt's start
to now, into categories that add up to it (``CHARGED``). Nothing here reads a file or a clock (``feed.py`` does), so
tests drive it with made-up times. docs/tracking-internals.md#goodput-and-badput says where each second goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from primus.tracking.goodput.recent import (
    DEVIATION,
    SLOW,
    SlowSteps,
    Span,
    window_fractions,
    window_name,
)
from primus.tracking.journal.records import (
    BUSY_EVENT,
    END_EVENT,
    EVENT,
    LOADED,
    METRICS,
    SAVE_START,
    SAVED,
    START_EVENT,
    RunStatus,
    ends_pause,
)
from primus.tracking.settings.config import GOODPUT_WINDOWS
from primus.upstreams import backends

PRODUCTIVE, FRACTION = "goodput/productive_s", "goodput/productive_fraction"
STARTUP, SAVE, LOAD, EVAL = "badput/startup_s", "badput/checkpoint_save_s", "badput/checkpoint_load_s", "badput/eval_s"
DATA_WAIT, LOST, GAP, OTHER = "badput/data_wait_s", "badput/lost_progress_s", "badput/restart_gap_s", "badput/other_s"
CHARGED = (PRODUCTIVE, STARTUP, SAVE, LOAD, EVAL, DATA_WAIT, LOST, GAP, OTHER)  # these add up to the wall time
DISRUPTIONS = "goodput/disruptions"  # the attempts after the first
# at every log step (the windows: the default ones), and where the log interval's step time is measured
WHOLE_RUN = (PRODUCTIVE, FRACTION, *CHARGED[1:], SLOW, DISRUPTIONS)
EVERY_LOG_STEP = (*WHOLE_RUN, *map(window_name, GOODPUT_WINDOWS))
NAMES = (*EVERY_LOG_STEP, DEVIATION)

GOODPUT_EVENT, GOODPUT_TEXT = "goodput", "goodput/breakdown"  # the run's end: its figures, and as a line of text
BUSY_KINDS = {"evaluation": EVAL, "checkpoint save": SAVE, "checkpoint load": LOAD}  # a busy's "what"
ITERATION_MS = "perf/iteration_time_ms"  # ours (measure/perf.py)


def first_value(kind: str, data: Mapping[str, Any]) -> float | None:
    """The first of the backends' names for ``kind`` that ``data`` holds, in the kind's unit, else None."""
    for name in backends.metric_names(kind):
        value = data.get(name)
        if isinstance(value, int | float) and value >= 0:
            return float(value) * backends.metric_scale(name)
    return None


def seconds_per_iteration(data: Mapping[str, Any]) -> float | None:
    """Ours where the perf figures are on, else upstream's own."""
    ours = data.get(ITERATION_MS)
    return ours / 1000 if isinstance(ours, int | float) and ours >= 0 else first_value(backends.ITERATION_S, data)


def data_wait_per_iteration(data: Mapping[str, Any]) -> float | None:
    """Seconds an iteration waited for its batches, where upstream times it: in seconds (Megatron's batch-generator
    timer), or as a share of its seconds per iteration (TorchTitan's); else None."""
    waited = first_value(backends.DATA_WAIT_S, data)
    if waited is not None:
        return waited
    share, per_iteration = first_value(backends.DATA_WAIT_SHARE, data), first_value(backends.ITERATION_S, data)
    return share * per_iteration if share is not None and per_iteration is not None else None


@dataclass
class Attempt:
    start: float
    cursor: float  # charged up to here
    last: float  # its last record's time
    startup: float = 0.0  # charged to start-up so far
    pending: float = 0.0  # since its last log step: productive once the next log step comes
    last_step: int | None = None
    last_step_at: float | None = None
    busy: str | None = None  # the category a save, evaluation or load in progress is charged to
    busy_after: int | None = None  # the step whose log may come during it without ending it
    paused: bool = False  # a save, evaluation or load since its last log step: the interval's step time not judged
    ended: str | None = None  # its end record's status


@dataclass
class Goodput:
    windows: tuple[int, ...] = GOODPUT_WINDOWS  # seconds (recent.py)
    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CHARGED, 0.0))
    kept: list[Span] = field(default_factory=list)  # each log interval's productive seconds, in time order
    slow: SlowSteps = field(default_factory=SlowSteps)
    first_start: float | None = None
    attempt: Attempt | None = None
    attempts: int = 0

    def begin(self, at: float, process_start: float | None = None, job_start: float | None = None) -> None:
        """A new attempt whose ``start`` record is at ``at``; when its process and its (Slurm) job began, if known.
        The one before it ends at its last record; a job that began before then is the same job's restart."""
        previous = self.attempt
        start = min(at, process_start if process_start is not None else at)
        if previous is None or (job_start is not None and job_start >= previous.last):
            start = min(start, job_start if job_start is not None else start)
        if previous is not None:
            self._close(previous)
            start = max(start, previous.last)  # clocks of two hosts may disagree: never before the last record
            self.totals[GAP] += start - previous.last
        if self.first_start is None:
            self.first_start = start
        self.attempt = Attempt(start=start, cursor=start, last=max(start, at))
        self.attempts += 1

    def observe(self, kind: str, step: int, at: float, data: Mapping[str, Any], only: Any = None) -> bool:
        """One journal record (kind, step, time in seconds, data, destinations) or the same as it is logged; True
        when it is a new log step of the attempt."""
        if kind == EVENT and data.get("event") == START_EVENT:
            self.begin(at, _seconds(data.get("process_start_ms")), _seconds(data.get("job_start_ms")))
            return False
        if self.attempt is None:
            self.begin(at)
        attempt = self.attempt
        assert attempt is not None
        attempt.last = max(attempt.last, at)
        if kind == EVENT:
            self._event(attempt, str(data.get("event")), _seconds(data.get("at_ms")) or at, data)
        elif kind == METRICS and only is None:
            return self._step(attempt, step, at, data)
        return False

    def figures(self, now: float) -> dict[str, float]:
        """The cumulative figures at ``now``, the time of the latest record or later; what the current attempt did
        since its last charge goes where it would go if it ended now."""
        totals = dict(self.totals)
        attempt = self.attempt
        if attempt is not None:
            rest = max(0.0, now - attempt.cursor)
            where = attempt.busy or (STARTUP if attempt.last_step is None else OTHER)
            totals[where] += rest
            totals[OTHER] += attempt.pending
        wall = self.wall_s(now)
        totals[FRACTION] = totals[PRODUCTIVE] / wall if wall > 0 else 0.0
        totals[SLOW] = self.slow.slow_s
        totals[DISRUPTIONS] = max(0, self.attempts - 1)
        figures = {name: round(totals[name], 3) if name != FRACTION else round(totals[name], 4) for name in WHOLE_RUN}
        return {
            **figures,
            **window_fractions(self.kept, self.windows, now if self.first_start is None else self.first_start, now),
        }

    def step_figures(self) -> dict[str, float]:
        """The latest log interval's own: its step time over the ideal, where it was measured."""
        deviation = self.slow.deviation
        return {} if deviation is None else {DEVIATION: round(deviation, 4)}

    def wall_s(self, now: float) -> float:
        return now - self.first_start if self.first_start is not None else 0.0

    # -- charging --------------------------------------------------------------------------------
    def _charge(self, attempt: Attempt, to: float) -> None:
        elapsed = max(0.0, to - attempt.cursor)
        attempt.cursor = max(attempt.cursor, to)
        if attempt.busy is not None:
            self.totals[attempt.busy] += elapsed
        elif attempt.last_step is None:
            self.totals[STARTUP] += elapsed
            attempt.startup += elapsed
        else:
            attempt.pending += elapsed

    def _event(self, attempt: Attempt, event: str, at: float, data: Mapping[str, Any]) -> None:
        if event in (SAVE_START, SAVED, BUSY_EVENT):
            on = event == SAVE_START or (event == BUSY_EVENT and bool(data.get("on")))
            kind = SAVE if event != BUSY_EVENT else BUSY_KINDS.get(str(data.get("what")), OTHER)
            self._charge(attempt, at)
            if on and attempt.busy is None:
                attempt.busy, attempt.busy_after, attempt.paused = kind, data.get("after_step"), True
            elif not on and attempt.busy == kind:
                attempt.busy = None
        elif event == LOADED:
            seconds = data.get("seconds")
            took = float(seconds) if isinstance(seconds, int | float) and seconds > 0 else 0.0
            self._charge(attempt, at - took)
            loading = max(0.0, at - attempt.cursor)
            attempt.cursor = max(attempt.cursor, at)
            self.totals[LOAD] += loading
            attempt.paused = True
            if isinstance(data.get("iteration"), int):
                self._lose_after(data["iteration"])
        elif event == END_EVENT:
            self._charge(attempt, at)
            attempt.ended = str(data.get("status"))

    def _step(self, attempt: Attempt, step: int, at: float, data: Mapping[str, Any]) -> bool:
        if attempt.last_step is not None and step <= attempt.last_step:
            return False  # a second record of the step (evaluation scalars, another x-axis)
        self._charge(attempt, at)
        if ends_pause(step, attempt.busy_after):  # the save or evaluation is over, whether or not its end was marked
            attempt.busy = None
        productive, attempt.pending = attempt.pending, 0.0
        if attempt.last_step is None:  # the attempt's first log step: steps from here on were computed again
            self._lose_after(step - 1)
            since = self.kept[-1].step if self.kept else 0
            per_iteration = seconds_per_iteration(data)
            if per_iteration is not None:  # the interval's steps were training, not start-up
                carved = min(attempt.startup, per_iteration * max(0, step - since))
                self.totals[STARTUP] -= carved
                attempt.startup -= carved
                productive += carved
            iterations = max(1, step - since)
            begun = attempt.start
        else:
            iterations = step - attempt.last_step
            begun = attempt.last_step_at if attempt.last_step_at is not None else attempt.start
        # the interval's step time, data wait in; one with a pause leaves its steps' time part in the pause
        self.slow.interval(None if attempt.paused else productive, iterations)
        attempt.paused = attempt.busy is not None  # a pause this log step did not end: the next interval's too
        waited = data_wait_per_iteration(data)
        if waited is not None:
            waited = min(productive, waited * iterations)
            self.totals[DATA_WAIT] += waited
            productive -= waited
        self.totals[PRODUCTIVE] += productive
        self.kept.append(Span(step, productive, begun, at))
        attempt.last_step, attempt.last_step_at = step, at
        return True

    def _lose_after(self, iteration: int) -> None:
        """Steps past ``iteration`` are computed again: their productive time was lost."""
        while self.kept and self.kept[-1].step > iteration:
            lost = self.kept.pop()
            self.totals[PRODUCTIVE] -= lost.productive
            self.totals[LOST] += lost.productive

    def _close(self, attempt: Attempt) -> None:
        """An attempt another one followed: charged to its last record; what it computed after its last log step
        was lost unless it ended normally."""
        self._charge(attempt, attempt.last)
        self.totals[OTHER if attempt.ended == RunStatus.FINISHED else LOST] += attempt.pending
        attempt.pending = 0.0


def _seconds(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, int | float) else None


def breakdown(figures: Mapping[str, float], wall_s: float, attempts: int) -> str:
    """One console line: the fraction, then each category that is not zero."""
    parts = ", ".join(f"{label(name)} {figures[name]:.1f} s" for name in CHARGED if figures.get(name))
    plural = "s" if attempts != 1 else ""
    return (
        f"[primus] goodput {100 * figures.get(FRACTION, 0.0):.1f}% of {wall_s:.1f} s "
        f"({attempts} attempt{plural}): {parts or 'nothing yet'}"
    )


def label(name: str) -> str:
    """A figure's name for people: ``badput/restart_gap_s`` -> ``restart gap``."""
    return name.split("/")[1].removesuffix("_s").replace("_", " ")
