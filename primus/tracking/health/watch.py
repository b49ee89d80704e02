"""Watches one run's health from the process that delivers it: follows the journal from where this process of
the run started, feeds the detectors (``detectors.py``), and tells a person of each alert.

A journal follower (``tracking/features.py``) of the delivery process, on a thread of it, so it notices silence
even while the trainer is wedged in C code, and never costs the training step anything; with ``delivery="thread"``
or no tracker, of the training process. An alert it raises is told at once: one console line
(``[primus] ALERT ...``, printed by the trainer's console when the trainer is alive), the webhook
(``webhook.py``), and at a stall the ranks' stacks (``stacks.py``); then ``journal_alert`` has the trainer journal
it for the trackers. An alert the trainer journaled itself (``failed``, ``killed``) is told when read here.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from primus.log import outside_except
from primus.tracking.health.detectors import HealthMonitor
from primus.tracking.health.stacks import dump_stacks
from primus.tracking.health.webhook import Webhook
from primus.tracking.journal.followers import Follower
from primus.tracking.journal.reader import JournalReader, tail_records
from primus.tracking.journal.records import Alert, AlertKind, Record, event_of
from primus.tracking.settings.config import HealthSettings

log = logging.getLogger("primus.tracking")

WATCH_S = 1.0  # how often the journal and the clock are looked at
PRIME_BYTES = 1 << 20  # the journal's tail a restarted watch takes in: thousands of steps


class Posted:
    """The alerts one delivery process has posted to the webhook, by (experiment, kind, iteration): the runs of one
    job that share the node's delivery process (TorchTitan's save_for_all_ranks: a run per rank) post a hang once
    per node, not once per rank. Each rank's console and trackers still get their own."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()

    def first(self, experiment: str, alert: Alert) -> bool:
        key = (experiment, str(alert.kind), alert.iteration)
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


class HealthWatch(Follower):
    def __init__(
        self,
        run_dir: Path,
        settings: HealthSettings,
        run_name: str,
        experiment: str,
        journal_alert: Callable[[Alert], object],
        start: int = 0,
        webhook: Webhook | None = None,
        clock: Callable[[], float] = time.time,
        posted: Posted | None = None,
        restarted: bool = False,
        told_journaled: Callable[[Alert], object] = lambda alert: None,
    ):
        self.run_dir = run_dir
        self.run_name = run_name
        self.experiment = experiment
        self.journal_alert = journal_alert
        self.told_journaled = told_journaled  # an alert the trainer journaled, told here
        self.webhook = webhook
        self.posted = posted or Posted()
        self.clock = clock
        self.monitor = HealthMonitor(settings, clock())
        if restarted:  # the run went on while its delivery process was started again: what came before ``start``
            self.monitor.prime(r for r in tail_records(run_dir, PRIME_BYTES) if r.end <= start)
        self.told: list[Alert] = []  # every alert this watch told a person of
        self._reader = JournalReader(run_dir)
        self._offset = self._end = start
        self._stop = threading.Event()
        self._polling = threading.Lock()  # the watch's thread, and whoever asks it to catch up
        self.thread = threading.Thread(target=self._main, name="primus-health-watch", daemon=True)

    def start(self) -> tuple[threading.Thread]:
        self.thread.start()
        return (self.thread,)

    def notify(self, end: int) -> None:
        """Read up to ``end`` at the next look (each ``WATCH_S``: the clock is looked at then, grown or not)."""
        self._end = end

    def poll(self) -> None:
        """Read what the journal gained, then look at the clock."""
        for record in self._new_records():
            if isinstance(journaled := event_of(record), Alert):
                if not record.data.get("notified"):
                    self._tell(journaled)
                    self.told_journaled(journaled)
                continue
            for alert in self.monitor.observe(record):
                self._raise(alert)
        for alert in self.monitor.check(self.clock()):
            self._raise(alert)

    def close(self, deadline: float, died: bool = False) -> None:
        """At the run's end: stop watching, tell what the journal's tail holds, post what is left by ``deadline``.
        ``died``: the training process ended without ending the run; no one else can tell that."""
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(max(0.0, deadline - time.monotonic()))
        if not self.thread.is_alive():
            self._poll_safely()
            if died and not self.monitor.ended:
                last = self.monitor.stall.last_step or 0
                self._tell(
                    Alert(AlertKind.KILLED, last, "the training process died (SIGKILL? out of memory?)", self.clock())
                )
        self._reader.close()
        if self.webhook is not None:
            self.webhook.close(deadline)

    def _main(self) -> None:
        while not self._stop.wait(WATCH_S):
            self._poll_safely()

    def ending(self, drained: bool) -> None:
        """Read the journal to its end and look at the clock now, whatever the watch's pace: the alerts of a run's
        last steps journaled before its end."""
        if drained:
            self._poll_safely()

    def _poll_safely(self) -> None:
        with self._polling:
            error = outside_except(self.poll)
        if error is not None:  # a bug here must not stop delivery; the journal still has everything
            log.warning("primus tracking: run health watch failed: %r", error)

    def _new_records(self) -> list[Record]:
        found: list[Record] = []
        while True:
            records, offset = self._reader.read(self._offset, self._end)
            if offset == self._offset:
                return found
            self._offset = offset
            found += records

    def _raise(self, alert: Alert) -> None:
        self._tell(alert)
        if alert.kind == AlertKind.STALLED:
            dump_stacks(self.run_dir, f"{alert.kind} at iteration {alert.iteration}: {alert.text}")
        self.journal_alert(alert)

    def _tell(self, alert: Alert) -> None:
        self.told.append(alert)
        print(alert.console_line(self.run_name), file=sys.stderr, flush=True)
        if self.webhook is not None and self.posted.first(self.experiment, alert):
            self.webhook.send(alert.body(self.run_name, self.experiment))
