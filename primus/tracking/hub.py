"""The metrics hub: the training thread's only contact with tracking.

``log`` appends ``(kind, step, time, dict, only)`` to a deque and returns: no lock, no I/O, no
validation beyond a length check. ``log_later`` appends a function instead, which the hub thread calls for the
step's records: a backend moves there what it would otherwise work out on the training thread (grouping upstream's
scalars, perf figures). A hub thread wakes every ``tick_s``, turns what is queued into
journal lines (plain floats, redacted text), appends them to the journal with one write, and then
tells each sink worker how far the journal goes. Memory is bounded by ``capacity`` queued records;
past that, records are dropped and counted (never in normal operation: the hub drains every tick).

When the journal cannot be written (its disk is full), the tick's records go directly to the sink workers
(``deliver_direct``), counted in ``not_journaled``; every tick tries the journal again. The run's end says
how many records that was and which sinks got them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from primus.log import outside_except
from primus.redaction import redact_text, redact_value
from primus.tracking.delivery.worker import Worker
from primus.tracking.journal.followers import Follower
from primus.tracking.journal.keeper import JournalKeeper
from primus.tracking.journal.records import EVENT, METRICS, TEXT, Logged, decode, encode
from primus.tracking.journal.writer import JournalWriter

log = logging.getLogger("primus.tracking")

MAX_TEXT_CHARS = 64 * 1024
ALREADY_TRACKED = "already_tracked"  # a resumed run's re-trained steps: not lost, tracked by an earlier process
KIND_NAMES = {METRICS: "metrics", TEXT: "texts", EVENT: "events"}
LATER = "later"  # a queued function that gives metrics records, called on the hub thread
Records = Callable[[], Iterable[Logged]]
# what the hub's thread does with a log_later function's records, given the time it was queued (goodput's figures)
Completion = Callable[[Iterable[Logged], float], Iterable[Logged]]


@dataclass
class NotJournaled:
    """What the journal could not take: records by kind, the metrics steps they span, the first error."""

    records: Counter[str] = field(default_factory=Counter)
    first_step: int | None = None
    last_step: int | None = None
    error: str = ""

    def add(self, kind: str, step: int) -> None:
        self.records[KIND_NAMES[kind]] += 1
        if kind == METRICS:
            self.first_step = step if self.first_step is None else min(self.first_step, step)
            self.last_step = step if self.last_step is None else max(self.last_step, step)

    @property
    def total(self) -> int:
        return sum(self.records.values())

    def describe(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.records.items()))
        steps = f", steps {self.first_step}-{self.last_step}" if self.first_step is not None else ""
        return f"{self.total} records ({kinds}{steps})"


class MetricsHub:
    def __init__(
        self,
        journal: JournalWriter,
        workers: Sequence[Worker],
        capacity: int,
        tick_s: float = 0.1,
        tracked_until: Mapping[tuple[str, ...] | None, int] | None = None,
        followers: Sequence[JournalKeeper | Follower] = (),
        complete: Completion | None = None,
    ):
        self.journal = journal
        self._complete = complete  # on the hub's thread: queueing a function costs the training thread nothing more
        # resumed run: the last step an earlier process tracked, per destination; steps re-trained since the
        # checkpoint are not tracked twice (W&B would refuse them, MLflow and TensorBoard would show two points)
        self._tracked_until = dict(tracked_until or {})
        self.workers = list(workers)
        # told the journal's end after appends: the one signal that it grew
        self._followers: list[Worker | JournalKeeper | Follower] = [*workers, *followers]
        # where records the journal could not take go: each worker, or the delivery process of several
        self._direct_routes = list(dict.fromkeys(w.direct_route for w in self.workers))
        self.not_journaled = NotJournaled()
        self._journal_failing = False
        self.dropped: Counter[str] = Counter()
        self._capacity = capacity
        self._tick_s = tick_s
        self._pending: deque[tuple[str, Any, float, Any, Sequence[str] | None]] = deque()
        self._accepting = True
        self.refused = 0  # these three are written by the training thread only
        self.malformed = 0
        self.last_step = 0  # of the latest step queued for every tracker: the iteration a failed or killed alert names
        self._warned: set[str] = set()
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._requested = 0
        self._drained = 0
        self._thread = threading.Thread(target=self._main, name="primus-tracking-hub", daemon=True)

    def start(self) -> None:
        for w in self.workers:
            w.start()
        self._thread.start()

    # -- training thread -----------------------------------------------------------------
    def log(self, step: int, metrics: Mapping[str, float], only: Sequence[str] | None = None) -> None:
        try:
            if self._accepting and len(self._pending) < self._capacity:
                self._pending.append((METRICS, step, time.time(), dict(metrics), only))
            else:
                self.refused += 1
        except Exception:  # not a mapping: count it, never raise into training
            self.malformed += 1

    def log_later(self, records: Records, step: int | None = None) -> None:
        """Queue ``records``, called on the hub thread when it drains the queue, in its place among what is logged:
        its metrics records are journaled as ``log``'s would be, with the time of this call (given to ``complete``
        with them). ``step``: the training step they are of, if one (``last_step``)."""
        if step is not None:
            self.last_step = step
        if self._accepting and len(self._pending) < self._capacity:
            self._pending.append((LATER, 0, time.time(), records, None))
        else:
            self.refused += 1

    def log_text(self, tag: str, text: str, step: int = 0, only: Sequence[str] | None = None) -> None:
        if self._accepting and len(self._pending) < self._capacity:
            self._pending.append((TEXT, step, time.time(), (tag, text), only))
        else:
            self.refused += 1

    def event(self, name: str, **fields: Any) -> None:
        """A lifecycle record in the journal (start, end); accepted even while closing."""
        self._pending.append((EVENT, 0, time.time(), {"event": name, **fields}, None))

    def flush(self, timeout_s: float, sinks: Collection[str] | None = None) -> bool:
        """Journal everything logged so far and wait until every running sink (or those named) delivered it."""
        deadline = time.monotonic() + timeout_s
        if not self._wait_drained(deadline):
            return False
        waits = [w.request_flush(self.journal.size) for w in self.workers if sinks is None or w.name in sinks]
        return all(ev.wait(max(0.0, deadline - time.monotonic())) for ev in waits)

    def close(self, status: str, deadline: float) -> list[Worker]:
        """Stop intake, journal what is queued, let the sinks deliver until ``deadline``; return the
        workers that did not finish in time."""
        self._accepting = False
        self._stop.set()
        self._wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if not self._thread.is_alive():  # else the disk hangs: no end record, the sinks still get their deadline
            self._drain()  # anything a racing log() appended after the last tick
            self._count("queue_full", self.refused)
            self._count("not_a_mapping", self.malformed)
            self.refused = self.malformed = 0
            fields = {"event": "end", "status": status, "dropped": dict(self.dropped)}
            if self.not_journaled.total:
                fields["not_journaled"] = dict(self.not_journaled.records)
            self._write([encode(EVENT, 0, int(time.time() * 1000), fields)])
            try:
                self.journal.sync()
            except OSError:
                pass  # what the disk could not keep went to the trackers directly, and is counted
        for w in self.workers:
            w.close(status, deadline)
        return [w for w in self.workers if not w.join(deadline)]

    # -- hub thread ----------------------------------------------------------------------
    def _main(self) -> None:
        while True:
            stopping = self._stop.is_set()
            with self._cond:
                requested = self._requested
            error = outside_except(self._drain)
            if error is not None:  # a bug (a full disk is handled in _write): warn once, keep the loop alive
                self._warn_once(
                    "drain",
                    "primus tracking: could not journal the queued records in %s: %s",
                    self.journal.dir,
                    redact_text(repr(error)),
                )
            with self._cond:
                self._drained = requested
                self._cond.notify_all()
            if stopping:
                return
            self._wake.wait(self._tick_s)
            self._wake.clear()

    def _wait_drained(self, deadline: float) -> bool:
        with self._cond:
            self._requested += 1
            wanted = self._requested
        self._wake.set()
        with self._cond:
            return self._cond.wait_for(
                lambda: self._drained >= wanted or not self._thread.is_alive(), max(0.0, deadline - time.monotonic())
            )

    def _drain(self) -> None:
        lines: list[bytes] = []
        pending = self._pending
        while pending:
            kind, step, ts, payload, only = pending.popleft()
            if kind == LATER:
                lines.extend(self._later(ts, payload))
                continue
            line = self._line(kind, step, ts, payload, only)
            if line is None:
                continue
            lines.append(line)
        if lines:
            self._write(lines)

    def _write(self, lines: list[bytes]) -> None:
        """Journal the lines and tell the workers; when the journal cannot take them, hand them to the workers."""
        try:
            end = self.journal.append(lines)
        except OSError as error:
            self._direct(lines, error)
            return
        if self._journal_failing:
            self._journal_failing = False
            self._warn_once(
                "journal_back",
                "primus tracking: the journal %s is written again; %d records went directly to the trackers meanwhile",
                self.journal.dir,
                self.not_journaled.total,
            )
        for f in self._followers:
            f.notify(end)

    def _direct(self, lines: list[bytes], error: OSError) -> None:
        after = self.journal.size
        records = [decode(line, after) for line in lines]
        for r in records:
            self.not_journaled.add(r.kind, r.step)
        self._journal_failing = True
        self.not_journaled.error = self.not_journaled.error or redact_text(error.strerror or str(error))
        self._warn_once(
            "journal_failing",
            "primus tracking: could not write the journal %s (%s): records go directly "
            "to the trackers that are up until it can be written again; the end of the run says how many "
            "and where they went",
            self.journal.dir,
            self.not_journaled.error,
        )
        for route in self._direct_routes:
            route.deliver_direct(after, records)

    def _later(self, ts: float, records: Records) -> list[bytes]:
        try:
            made = records() if self._complete is None else self._complete(records(), ts)
            lines = [self._line(METRICS, step, ts, metrics, only) for step, metrics, only in made]
        except Exception as error:  # the backend's function failed: its records are lost, counted, said once
            self._count("records_failed", 1)
            self._warn_once(
                "later", "primus tracking: a step's records could not be made: %s", redact_text(repr(error))
            )
            return []
        return [line for line in lines if line is not None]

    def _line(self, kind: str, step: Any, ts: float, payload: Any, only: Sequence[str] | None) -> bytes | None:
        try:
            step = int(step)
            only = None if only is None else (only,) if isinstance(only, str) else tuple(map(str, only))
        except (TypeError, ValueError):
            self._count("invalid_step_or_only", 1)
            return None
        if kind == METRICS:
            if step <= self._tracked_until.get(only, -1):
                self._retrained(step, only)
                return None
            data: Mapping[str, Any] = self._floats(payload)
            if not data:
                return None
        elif kind == TEXT:
            tag, text = payload
            data = {"tag": str(tag), "text": redact_value(str(tag), str(text))[:MAX_TEXT_CHARS]}  # by tag and shape
        else:
            data = payload
        return encode(kind, step, int(ts * 1000), data, only)

    def _floats(self, metrics: Mapping[str, Any]) -> dict[str, float]:
        out = {}
        for name, value in metrics.items():
            try:
                out[str(name)] = float(value)  # a 0-d tensor becomes a float here, off the training thread
            except (TypeError, ValueError):
                self._count("invalid_value", 1)
                self._warn_once(
                    f"value:{name}",
                    "primus tracking: metric %r has a value that is not a number (%s); it is skipped",
                    name,
                    type(value).__name__,
                )
        return out

    def _retrained(self, step: int, only: tuple[str, ...] | None) -> None:
        self._count(ALREADY_TRACKED, 1)
        if "retrained" not in self._warned:
            self._warned.add("retrained")
            log.info(
                "primus tracking: resumed at step %d, which an earlier process of this run already tracked (up to "
                "step %d): steps trained again since the checkpoint are not tracked twice",
                step,
                self._tracked_until[only],
            )

    def _count(self, what: str, n: int) -> None:
        if n:
            self.dropped[what] += n

    def _warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)
