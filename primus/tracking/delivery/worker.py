"""One background thread per sink: it follows the journal from the sink's saved cursor and feeds
the sink, retrying with capped exponential backoff while the sink fails. Nothing it does can
reach the training thread: failures are counted, warned about once per outage, and the data stays
in the journal.

Records the journal could not take (a full disk) come to it directly (``deliver_direct``), tagged with the
journal offset they follow: it delivers the journal up to there, then them, then the journal on. They are
held in memory only, at most ``DIRECT_MAX`` of them; past that, and at the end of the run, what is left is
counted as lost for this sink."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from primus.log import outside_except
from primus.redaction import redact_text
from primus.tracking.journal.files import JOURNAL_DIR
from primus.tracking.journal.reader import JournalReader
from primus.tracking.journal.records import Record
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable

log = logging.getLogger("primus.tracking")

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 10.0
POLL_S = 1.0  # a worker also wakes on its own, in case a notify was missed
FLUSH_EVERY_S = 5.0  # sinks not durable on write are flushed at least this often
DIRECT_MAX = 10_000  # records not journaled, held for a sink that is down


class DirectRoute(Protocol):
    """Where records the journal could not take go: a ``SinkWorker``, or the delivery process for all its sinks."""

    def deliver_direct(self, after: int, records: Sequence[Record]) -> None: ...


class Worker(Protocol):
    """What the hub and the run use of a sink's worker: ``SinkWorker`` (a thread of this process) and
    ``process.RemoteSinkWorker`` (a sink of the delivery process) implement it."""

    name: str
    failures: int
    last_error: str  # redacted
    disabled: bool  # off for the run (its package missing, its mode refused)
    direct_delivered: int  # records not journaled that reached the sink

    @property
    def direct_lost(self) -> int: ...  # ...and those that did not
    @property
    def direct_route(self) -> DirectRoute: ...  # where the hub hands records the journal could not take
    @property
    def pending_bytes(self) -> int: ...  # of the journal, not delivered yet
    def start(self) -> None: ...
    def notify(self, end: int) -> None: ...  # the journal now ends at ``end``
    def request_flush(self, offset: int) -> threading.Event: ...  # set once delivered up to ``offset``
    def close(self, status: str, deadline: float) -> None: ...  # deliver the rest, then end the tracker run
    def join(self, deadline: float) -> bool: ...  # True: it ended in time


class SinkWorker:
    def __init__(self, sink: Sink, run_dir: Path, cursors: CursorStore):
        self.sink = sink
        self.name = sink.name
        self.journal = run_dir / JOURNAL_DIR
        self.reader = JournalReader(run_dir)
        self.cursors = cursors
        self.direct_delivered = 0  # records not journaled that reached this sink
        self.direct_lost = 0  # ...and those that did not (held too many, or left at the end)
        self._direct: deque[tuple[int, list[Record]]] = deque()
        self._direct_held = 0
        self.failures = 0
        self.last_error = ""
        self.disabled = False
        self.target: str | None = None
        self.cursor = 0
        self.records_sent = 0  # written to the sink by this worker (for progress lines)
        self.start_cursor = 0  # where this worker started in the journal (the sink's saved cursor)
        self._end = 0
        self._wake = threading.Event()
        self._urgent = threading.Event()  # a flush or close request: ends a pacing wait early
        self._last_delivery: float | None = None  # none yet: the first delivery is never held back
        self._lock = threading.Lock()
        self._flushes: list[tuple[int, threading.Event]] = []
        self._close: tuple[str, float] | None = None
        self._outage_warned = False
        self._unflushed = False
        self._last_flush = time.monotonic()
        self._finished = False
        self._thread = threading.Thread(target=self._main, name=f"primus-tracking-{sink.name}", daemon=True)

    # -- called by the hub / the run (``Worker``) --------------------------------------------
    @property
    def direct_route(self) -> SinkWorker:
        return self

    @property
    def thread(self) -> threading.Thread:
        """The thread that calls the sink (a shared delivery process routes what the tracker client logs by it)."""
        return self._thread

    def start(self) -> None:
        self._thread.start()

    @property
    def finished(self) -> bool:
        """The thread has ended (delivered and closed, gave up, or out of time)."""
        return self._finished

    def notify(self, end: int) -> None:
        self._end = end
        self._wake.set()

    def deliver_direct(self, after: int, records: Sequence[Record]) -> None:
        """Records the journal could not take, to deliver once the journal up to offset ``after`` is."""
        mine = [r for r in records if r.is_for(self.sink.name)]
        if not mine:
            return
        with self._lock:
            if self._finished or self._direct_held + len(mine) > DIRECT_MAX:
                self.direct_lost += len(mine)
                return
            self._direct.append((after, mine))
            self._direct_held += len(mine)
        self._end = max(self._end, after)
        self._wake.set()

    def request_flush(self, offset: int) -> threading.Event:
        done = threading.Event()
        with self._lock:
            self._flushes.append((offset, done))
        self._urgent.set()
        self._wake.set()
        if self._finished:
            done.set()
        return done

    def close(self, status: str, deadline: float) -> None:
        self._close = (status, deadline)
        self._urgent.set()
        self._wake.set()

    def join(self, deadline: float) -> bool:
        self._thread.join(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()

    @property
    def pending_bytes(self) -> int:
        return max(0, self._end - self.cursor)

    # -- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        error = None
        try:
            if self._open():
                self._deliver_until_closed()
        except BaseException as e:  # a bug here must not take the process down; the journal keeps the data
            error = e
        finally:
            with self._lock:
                self._finished = True
                for _, done in self._flushes:
                    done.set()
                self._flushes.clear()
                self.direct_lost += self._direct_held  # no journal to come back to: these are gone for this sink
                self._direct.clear()
                self._direct_held = 0
            self.reader.close()
        if error is not None:
            self._failed("stopped", error)

    def _open(self) -> bool:
        backoff = BACKOFF_FIRST_S
        while not self._past_deadline():
            error = outside_except(self._open_once)
            if error is None:
                self._recovered()
                return True
            if isinstance(error, SinkUnavailable):
                self.disabled = True
                self.last_error = redact_text(str(error))[:500]  # its fix, for `primus tracking sync` to say
                log.warning("primus tracking: %s is off for this run: %s", self.sink.name, self.last_error)
                return False
            self._failed("could not start", error)
            backoff = self._backoff(backoff)
        return False

    def _open_once(self) -> None:
        self.target = self.sink.open()
        self.cursor = self.start_cursor = self.cursors.load(self.sink.name, self.target)

    def _deliver_until_closed(self) -> None:
        backoff = BACKOFF_FIRST_S
        while True:
            self._pace()
            self._wake.clear()  # before reading, so a notify that lands during delivery is not lost
            error = outside_except(self._deliver_and_flush)
            if error is not None:
                self._failed("failed to deliver", error)
                if self._past_deadline():
                    return
                backoff = self._backoff(backoff)
                continue
            self._recovered()
            backoff = BACKOFF_FIRST_S
            if self._close is not None and (self._delivered_all() or self._past_deadline()):
                break
            self._wake.wait(POLL_S)
        if self._past_deadline() and not self._delivered_all():
            return  # out of time: the process is exiting; `primus tracking sync` finishes the job
        status, _ = self._close
        error = outside_except(lambda: self.sink.close(status, complete=self._delivered_all()))
        if error is not None:  # everything was delivered; ending the tracker's run (or noting it) failed
            log.warning(
                "primus tracking: %s got every record but could not end its run cleanly (%s)",
                self.sink.name,
                redact_text(f"{type(error).__name__}: {error}")[:500],
            )
        if self._unflushed:  # close() flushed what the sink held
            self.cursors.save(self.sink.name, self.target, self.cursor)

    def _pace(self) -> None:
        """Wait out the sink's min_interval_s since the last delivery, unless a flush or close is asked for."""
        while self._close is None and not self._flushes and self._last_delivery is not None:
            gap = self.sink.min_interval_s - (time.monotonic() - self._last_delivery)
            if gap <= 0:
                return
            self._urgent.wait(gap)
            self._urgent.clear()

    def _deliver_and_flush(self) -> None:
        self._last_delivery = time.monotonic()
        self._deliver()
        self._serve_flushes()

    def _deliver(self) -> None:
        end = self._end
        while True:
            self._deliver_direct()
            stop = min(end, self._direct[0][0]) if self._direct else end  # the journal up to the next direct batch
            if self.cursor >= stop:
                break
            records, pos = self.reader.read(self.cursor, stop)
            if pos == self.cursor:
                break  # the last line is still being written
            records = [r for r in records if r.is_for(self.sink.name)]
            for chunk in self.sink.chunks(records) if records else ():
                self.sink.write(chunk)
                self.records_sent += len(chunk)
                self._advance(chunk[-1].end)
            self._advance(pos)
        if self._unflushed and time.monotonic() - self._last_flush > FLUSH_EVERY_S:
            self._flush_sink()

    def _deliver_direct(self) -> None:
        while self._direct and self._direct[0][0] <= self.cursor:
            for chunk in list(self.sink.chunks(self._direct[0][1])):
                self.sink.write(chunk)
                with self._lock:  # a retry after a failure sends only what is left of the batch
                    after, left = self._direct[0]
                    self._direct[0] = (after, left[len(chunk) :])
                    self._direct_held -= len(chunk)
                    self.direct_delivered += len(chunk)
            with self._lock:
                self._direct.popleft()

    def _delivered_all(self) -> bool:
        return self.cursor >= self._end and not self._direct

    def _advance(self, offset: int) -> None:
        self.cursor = offset
        if self.sink.durability is Durability.ON_WRITE:
            self.cursors.save(self.sink.name, self.target, offset)
        else:
            self._unflushed = True

    def _flush_sink(self) -> None:
        self.sink.flush()
        self._last_flush = time.monotonic()
        if self._unflushed and self.sink.durability is Durability.ON_FLUSH:
            self.cursors.save(self.sink.name, self.target, self.cursor)
            self._unflushed = False

    def _serve_flushes(self) -> None:
        with self._lock:
            ready = [f for f in self._flushes if self.cursor >= f[0] and not self._direct]
        if not ready:
            return
        self._flush_sink()
        with self._lock:
            for f in ready:
                self._flushes.remove(f)
                f[1].set()

    # -- failures ------------------------------------------------------------------------
    def _failed(self, what: str, error: BaseException) -> None:
        self.failures += 1
        self.last_error = redact_text(f"{type(error).__name__}: {error}")[:500]
        if not self._outage_warned:
            self._outage_warned = True
            log.warning(
                "primus tracking: %s %s (%s). Training continues; records stay in %s and are retried "
                "every few seconds.",
                self.sink.name,
                what,
                self.last_error,
                self.journal,
            )

    def _recovered(self) -> None:
        if self._outage_warned:
            self._outage_warned = False
            log.warning(
                "primus tracking: %s is delivering again after %d failed attempts", self.sink.name, self.failures
            )

    def _backoff(self, delay: float) -> float:
        deadline = self._close[1] if self._close else None
        wait = delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic()))
        time.sleep(wait)
        return min(delay * 2, BACKOFF_MAX_S)

    def _past_deadline(self) -> bool:
        return self._close is not None and time.monotonic() >= self._close[1]
