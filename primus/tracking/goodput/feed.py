"""The trainer's side of goodput (``accounting.py``): the accounting lives on the hub's thread, where each logged step's
records are made, and the step's cumulative figures join its record, so they are journaled like any metric and
``primus tracking sync`` replays them.

The run's events (checkpoints, ``busy``) are noted with their time from whatever thread makes them (a deque append)
and given to the accounting in order before the step that follows them. The earlier attempts of the run directory
are read from its journal once, on the hub's thread at the first step: the whole journal is read then (its cost
grows with the journal's size), off the training thread.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping
from itertools import takewhile
from pathlib import Path
from typing import Any

from primus.tracking.goodput.accounting import GOODPUT_EVENT, GOODPUT_TEXT, Goodput, breakdown
from primus.tracking.journal.followers import Follower, RunJournal
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import EVENT, METRICS, Logged
from primus.tracking.settings.config import GOODPUT_WINDOWS

log = logging.getLogger("primus.tracking")

JOB_START_ENV = "SLURM_JOB_START_TIME"  # epoch seconds, set by Slurm in the job's environment


def attempt_start_fields(environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """For this process's ``start`` record: when the process began and, under Slurm, when its job began (ms)."""
    fields: dict[str, int] = {}
    started = process_start_s()
    if started is not None:
        fields["process_start_ms"] = int(started * 1000)
    job_start = environ.get(JOB_START_ENV, "")
    if job_start.strip().isdigit():
        fields["job_start_ms"] = int(job_start) * 1000
    return fields


class GoodputFeed(Follower):
    """A journal follower of the run that journals its breakdown at the run's end; the steps' records are made on
    the hub's thread, which gives them here first (``with_figures``)."""

    def __init__(self, run: RunJournal, run_dir: Path, journal_until: int, windows: tuple[int, ...] = GOODPUT_WINDOWS):
        self._run = run
        self._run_dir = run_dir
        self._until = journal_until  # where this attempt's records begin: the earlier ones are read from the journal
        self._seeded = False
        self._failed = False  # said once
        self._noted: deque[tuple[float, Mapping[str, Any]]] = deque()
        self.goodput = Goodput(windows)

    def ending(self, drained: bool) -> None:
        """The run's goodput breakdown on the console, as text for the trackers (``goodput/breakdown``) and as an
        event in the journal (``goodput``: the figures at the end, for ``primus report``). Only once the hub's
        thread made every record queued (``drained``)."""
        end = self.final(time.time()) if drained else None
        if end is not None:
            figures, line = end
            self._run.log_text(GOODPUT_TEXT, line.removeprefix("[primus] "), self._run.last_step)
            self._run.event(GOODPUT_EVENT, **figures)

    # -- any thread ------------------------------------------------------------------------------
    def note(self, at: float, event: Mapping[str, Any]) -> None:
        """An event record's data (``{"event": name, ...}``) as it is journaled, at ``at`` (unix seconds)."""
        self._noted.append((at, event))

    def final(self, at: float) -> tuple[dict[str, float], str] | None:
        """The run's end: its figures at ``at`` and their breakdown, also printed on the console (None when the
        accounting failed). Called once the hub's thread has made every record queued so far (nothing else touches
        the accounting then)."""
        try:
            self._catch_up(at)
            figures = self.goodput.figures(at)
        except Exception as error:
            self._warn(error)
            return None
        line = breakdown(figures, self.goodput.wall_s(at), self.goodput.attempts)
        print(line, file=sys.stderr, flush=True)
        return figures, line

    # -- the hub's thread ------------------------------------------------------------------------
    def with_figures(self, made: Iterable[Logged], at: float) -> list[Logged]:
        """The records of a ``log_later`` function queued at ``at``, its step's figures added to its first record for
        every tracker (the hub's ``complete``)."""
        records = list(made)  # what the backend's function raises is the hub's to count
        try:
            for i, (step, metrics, only) in enumerate(records):
                if only is None:
                    self._catch_up(at)
                    if self.goodput.observe(METRICS, int(step), at, metrics):  # not a second record of a step
                        figures = {**self.goodput.figures(at), **self.goodput.step_figures()}
                        records[i] = (step, {**metrics, **figures}, only)
                    break
        except Exception as error:  # a bug here must not cost the step its records: they go on without figures
            self._warn(error)
        return records

    def _warn(self, error: Exception) -> None:
        if not self._failed:
            self._failed = True
            log.warning("primus tracking: goodput figures could not be worked out: %r", error)

    def _catch_up(self, at: float) -> None:
        if not self._seeded:
            self._seeded = True
            self._seed()
        while self._noted and self._noted[0][0] <= at:
            noted_at, event = self._noted.popleft()
            self.goodput.observe(EVENT, 0, noted_at, event)

    def _seed(self) -> None:
        for r in takewhile(lambda r: r.end <= self._until, read_all(self._run_dir)):
            self.goodput.observe(r.kind, r.step, r.ts_ms / 1000.0, r.data, r.only)


def process_start_s() -> float | None:
    """When this process began, in epoch seconds, to a clock tick (10 ms): its start in ticks since boot
    (/proc/self/stat) against the boot clock now. Not psutil's ``create_time``: it adds /proc/stat's boot time in
    whole seconds, up to a second early, which put a restart's start before the previous attempt's last record.
    None where there is no /proc (the start record's time stands for it)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.time() - since_boot
