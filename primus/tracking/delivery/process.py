"""The delivery process: the sinks (TensorBoard, W&B, MLflow, Comet and plugin sinks) run in a child process that
follows the journal, instead of on threads of the training process, where a tracker client's milliseconds of Python
per request would hold the GIL the training thread needs. The child runs the same ``SinkWorker`` per sink as a thread
would, from the same journal and cursors; parent and child talk in JSON lines over pipes, and the training process
never waits on it. The runs of a node that name the same ``delivery_group`` share one such process (``node.py``).
docs/tracking-internals.md#the-delivery-process gives the messages, the delivery lock and the node's process.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import primus
from primus.redaction import redact_text
from primus.tracking.delivery.node import attach
from primus.tracking.delivery.restarts import RestartBudget
from primus.tracking.delivery.worker import Worker
from primus.tracking.journal.files import JOURNAL_DIR
from primus.tracking.journal.reader import JournalReader, journal_end
from primus.tracking.journal.records import METRICS, Alert, AlertKind, Record, encode
from primus.tracking.journal.run_state import CursorStore, delivery_lock
from primus.tracking.settings.config import TrackingConfig

log = logging.getLogger("primus.tracking")

CHILD_MODULE = "primus.tracking.delivery.child"
KILL_GRACE_S = 1.0  # past the exit deadline, the child gets this long to report before it is killed
DIRECT_BATCHES = 1000  # hub ticks of records not journaled, queued for the pipe to the child
FIRST_STEP_BYTES = 1 << 20  # read to name the step a restarted sink resumes at: thousands of records


@dataclass(frozen=True)
class DeliverySpec:
    config: TrackingConfig  # resolved, with the W&B run id; without params and tags (the child reads meta.json)
    sinks: tuple[str, ...]
    log_level: int
    journal_from: int = 0  # where this process of the run starts in the journal: the health watch reads from there
    restarted: bool = False  # started again after one died: its watch takes in the run's recent records first

    def encode(self) -> bytes:
        return base64.b64encode(pickle.dumps(self)) + b"\n"

    @staticmethod
    def decode(line: bytes) -> DeliverySpec:
        return pickle.loads(base64.b64decode(line))


def sink_stats(worker: Worker) -> dict[str, Any]:
    """How a sink's worker fares, wherever it runs: what the delivery process reports and ``Run.stats`` shows."""
    names = ("failures", "last_error", "disabled", "direct_delivered", "direct_lost")
    return {name: getattr(worker, name) for name in names}


def message(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class RemoteSinkWorker:
    """One sink of the delivery process, as the hub and the run see a worker (``worker.Worker``)."""

    def __init__(self, process: DeliveryProcess, name: str):
        self.process = process
        self.name = name
        self.failures = 0
        self.last_error = ""
        self.disabled = False
        self.cursor = 0
        self.done = False  # the child ended this sink's worker (delivered, or out of time)
        self.direct_delivered = 0
        self.lost_on_the_way = 0  # records not journaled that never reached the child
        self._lost_in_child = 0
        self._end = 0

    @property
    def direct_route(self) -> DeliveryProcess:
        return self.process  # one copy of the records for all the child's sinks

    @property
    def direct_lost(self) -> int:
        return self.lost_on_the_way + self._lost_in_child

    def start(self) -> None:
        self.process.start()

    def notify(self, end: int) -> None:
        self._end = end
        self.process.grew(end)

    def request_flush(self, offset: int) -> threading.Event:
        return self.process.request_flush(self.name, offset)

    def close(self, status: str, deadline: float) -> None:
        self.process.close(status, deadline)

    def join(self, deadline: float) -> bool:
        return self.process.join(deadline) and self.done

    @property
    def pending_bytes(self) -> int:
        return max(0, self._end - self.cursor)

    def update(self, stats: dict[str, Any]) -> None:
        self.cursor = int(stats["cursor"])
        self.failures = int(stats["failures"])
        self.last_error = str(stats["last_error"])
        self.disabled = bool(stats["disabled"])
        self.done = bool(stats.get("done", False))
        self.direct_delivered = int(stats.get("direct_delivered", 0))
        self._lost_in_child = int(stats.get("direct_lost", 0))


class DeliveryProcess:
    def __init__(self, spec: DeliverySpec, run_dir: Path):
        self.spec = spec
        self.run_dir = run_dir
        self.workers = [RemoteSinkWorker(self, name) for name in spec.sinks]
        self._by_name = {w.name: w for w in self.workers}
        self._proc: subprocess.Popen[bytes] | None = None  # a private one; None when shared, or not started
        self.shared = False  # delivered by the node's shared process (which this run never kills)
        self._commands = -1
        self._end = self._told_end = 0  # the journal's end, and as far as the child was told (``grew``)
        self._lock = threading.Lock()  # the child's pipes, the requests waiting on it, starting and closing
        self._requests: dict[int, tuple[dict[str, Any], threading.Event]] = {}  # sent again to a restarted child
        self._next_id = 0
        self._closing = False
        self._killed = False
        self._reported_close = threading.Event()  # "closed" received: the child ended every sink
        self._gone = threading.Event()  # its output ended and it was not started again
        self.restarts = RestartBudget()
        self._restarts_told = 0  # delivery_restarted alerts a child's watch told (console, webhook)
        self._untold_from = 0  # where the watch reads from while one is not told: the journal before the oldest
        self._direct: queue.Queue[tuple[int, Sequence[Record]] | None] = queue.Queue(DIRECT_BATCHES)
        self._direct_fd = -1  # the current child's pipe for them; swapped under _direct_lock at a restart
        self._direct_lock = threading.Lock()
        self._direct_sender: threading.Thread | None = None
        self.on_alert: Callable[[Alert], None] = lambda alert: None  # an alert the child raised: journal it
        # started again, with the alert's text: the run journals it, and the new child's watch tells it
        self.on_restart: Callable[[str], None] = lambda text: None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._direct_sender is not None:  # started: each of its sinks' workers calls this
                return
            self._spawn(self.spec)
            self._direct_sender = threading.Thread(target=self._send_direct, name="primus-tracking-direct", daemon=True)
            self._direct_sender.start()

    def _spawn(self, spec: DeliverySpec) -> None:
        """A child for ``spec`` with new pipes, and a thread reading its replies. Called holding ``_lock``."""
        read_commands, commands = os.pipe()
        read_replies, write_replies = os.pipe()
        read_direct, write_direct = os.pipe()
        lock = take_delivery_lock(self.run_dir)
        try:
            self._launch(read_commands, write_replies, read_direct, lock)
        except BaseException:
            for fd in (commands, read_replies, write_direct):
                os.close(fd)
            raise
        finally:
            for fd in (read_commands, write_replies, read_direct, lock):
                os.close(fd)
        os.write(commands, spec.encode())  # a few kB into an empty pipe: never blocks
        os.set_blocking(commands, False)
        if self._commands >= 0:
            os.close(self._commands)
        self._commands = commands
        with self._direct_lock:  # a write to the dead child's pipe has failed by now (it has no reader)
            if self._direct_fd >= 0:
                os.close(self._direct_fd)
            self._direct_fd = write_direct
        threading.Thread(
            target=self._read_replies, args=(read_replies,), name="primus-tracking-delivery", daemon=True
        ).start()

    def _launch(self, read_commands: int, write_replies: int, read_direct: int, lock: int) -> None:
        """The node's shared process when the run names a delivery group and it can be reached; else a private one."""
        group = self.spec.config.delivery_group
        self.shared = False
        if group is not None:
            try:
                attach(group, (read_commands, write_replies, read_direct, lock), child_environment())
                self.shared = True
                return
            except OSError as e:
                log.warning(
                    "primus tracking: the delivery process shared by this node's ranks could not be reached "
                    "or started (%s); this run starts its own",
                    e,
                )
        self._proc = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE, str(write_replies), str(read_direct), str(lock)],
            stdin=read_commands,
            pass_fds=(write_replies, read_direct, lock),
            env=child_environment(),
            close_fds=True,
            start_new_session=True,
        )  # a job's SIGINT/SIGTERM to the group must not cut delivery

    def deliver_direct(self, after: int, records: Sequence[Record]) -> None:
        """Records the journal could not take: to the child, through a bounded queue (the hub never waits)."""
        if not self._gone.is_set():
            try:
                self._direct.put_nowait((after, records))
                return
            except queue.Full:
                pass
        self._lost_on_the_way(records)

    def grew(self, end: int) -> None:
        """The journal now ends at ``end`` (the hub appended; each of the child's sinks' workers calls this): the
        child's one signal to read on, once. One the pipe could not take goes with the next message."""
        with self._lock:
            self._end = max(self._end, end)
            if end > self._told_end and not self._gone.is_set() and self._send({"t": "grew", "end": end}):
                self._told_end = end

    def request_flush(self, sink: str, offset: int) -> threading.Event:
        return self._request({"t": "flush", "sink": sink, "offset": offset})

    def request_watch(self) -> threading.Event:
        """Set once the child's health watch has read the journal as far as it goes now, and the alerts that
        raised are here (``on_alert`` called): they come on the same pipe, before the answer."""
        return self._request({"t": "watch", "end": self._end})

    def _request(self, msg: dict[str, Any]) -> threading.Event:
        done = threading.Event()
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._requests[request_id] = (msg, done)
            sent = not self._gone.is_set() and self._send({**msg, "id": request_id})
        if not sent:
            done.set()  # as a worker thread that ended: nothing more will be delivered by this process
        return done

    def close(self, status: str, deadline: float) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        try:  # after the last batch of records not journaled: the sender says "end" to the child
            self._direct.put(None, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            pass
        with self._lock:
            told = self._send({"t": "close", "status": status, "within_s": max(0.0, deadline - time.monotonic())})
        if not told:
            # it reads no input (it died, or is stuck): it cannot be told to finish. Not killed at the deadline, so
            # the reader still says that delivery stopped (a shared process's death reaches it only as EOF).
            self._stop_child()

    def join(self, deadline: float) -> bool:
        """True when the child reported its end before ``deadline`` (plus a short grace); else it is killed."""
        if not self._gone.wait(max(0.0, deadline + KILL_GRACE_S - time.monotonic())):
            self._kill()
        elif self._proc is not None:
            try:
                self._proc.wait(KILL_GRACE_S)  # it reported and closed its output: it is exiting
            except subprocess.TimeoutExpired:
                self._kill()
        return self._reported_close.is_set()

    # -- plumbing ------------------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> bool:
        """Called holding ``_lock`` (a restart swaps the pipe)."""
        try:
            os.write(self._commands, message(obj))
            return True
        except OSError:  # full (the child is stuck) or closed (it is gone)
            return False

    def _send_direct(self) -> None:
        """Blocking writes, on this thread only; a batch the child died with is lost for its sinks (counted)."""
        while (batch := self._direct.get()) is not None:
            after, records = batch
            lines = [encode(r.kind, r.step, r.ts_ms, r.data, r.only) for r in records]
            if not self._write_direct(message({"t": "direct", "after": after, "n": len(lines)}) + b"".join(lines)):
                self._lost_on_the_way(records)
        # said, not left to EOF: a process the trainer forked (a data loader worker) keeps a copy of this end open,
        # and the child would wait its whole deadline
        self._write_direct(message({"t": "end"}))
        with self._direct_lock:
            os.close(self._direct_fd)
            self._direct_fd = -1

    def _write_direct(self, data: bytes) -> bool:
        with self._direct_lock:
            try:
                os.write(self._direct_fd, data)  # a blocking pipe: written whole
                return True
            except OSError:  # the child is gone
                return False

    def _lost_on_the_way(self, records: Sequence[Record]) -> None:
        for w in self.workers:
            w.lost_on_the_way += sum(r.is_for(w.name) for r in records)

    def _kill(self) -> None:
        """Past the exit deadline: the run's own report names what was left undelivered."""
        self._killed = True
        self._stop_child()

    def _stop_child(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _read_replies(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as replies:
            for line in replies:
                try:
                    self._dispatch(json.loads(line))
                except (ValueError, KeyError, TypeError) as e:
                    log.debug("primus tracking: unreadable message from the delivery process: %r", e)
        if self._reported_close.is_set() or not self._restarted():
            if not self._reported_close.is_set():
                self._died()
            self._gone.set()
            with self._lock:
                waiting = [done for _, done in self._requests.values()]
                self._requests.clear()
            for done in waiting:
                done.set()

    def _restarted(self) -> bool:
        """A child that died while the run goes on is started again (within ``restarts``' bound), from the sinks'
        saved cursors, for the same tracker runs; the requests it left unanswered are asked of the new one."""
        with self._lock:
            if self._closing or not self.restarts.take():
                return False
            died = self._how_it_ended()
            if self._restarts_told == self.restarts.used - 1:  # every earlier restart told: read from the alert below
                self._untold_from = journal_end(self.run_dir)
            journal_from = self._untold_from  # else the child killed before it told one: read that one again
            try:
                self._spawn(dataclasses.replace(self.spec, journal_from=journal_from, restarted=True))
            except OSError as e:
                log.warning("primus tracking: the delivery process could not be started again: %s", e)
                return False
            for request_id, (msg, _) in self._requests.items():
                self._send({**msg, "id": request_id})
        places = self._resume_places()
        resuming = ", ".join(
            f"{name} at step {step}" if step is not None else f"{name} up to date" for name, step in places.items()
        )
        text = (
            f"{died}; restarted ({self.restarts.used} of {self.restarts.limit} allowed within "
            f"{self.restarts.window_s / 60:.0f} min), resuming {resuming}"
        )
        self.on_restart(text)
        return True

    def _resume_places(self) -> dict[str, int | None]:
        """Each sink's first step not delivered, where its new worker starts (its saved cursor); None: none left."""
        cursors, reader = CursorStore(self.run_dir), JournalReader(self.run_dir)
        try:
            return {name: first_step(reader, cursors.offset(name)) for name in self.spec.sinks}
        finally:
            reader.close()

    def _how_it_ended(self) -> str:
        if self.shared:
            return f"the node's shared delivery process stopped delivering to {', '.join(self.spec.sinks)}"
        code = self._proc.wait() if self._proc is not None else None
        how = f"was killed (signal {-code})" if code is not None and code < 0 else f"exited with code {code}"
        return f"the delivery process for {', '.join(self.spec.sinks)} {how}"

    def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg["t"]
        for name, stats in msg.get("sinks", {}).items():  # "stats", and with "flushed" and "closed"
            self._by_name[name].update(stats)
        if kind == "closed":
            self._reported_close.set()
        elif kind == "flushed":
            with self._lock:
                request = self._requests.pop(msg["id"], None)
            if request is not None:
                request[1].set()
        elif kind == "log":
            logging.getLogger(msg["name"]).log(msg["level"], "%s", msg["msg"])
        elif kind == "told" and msg["kind"] == AlertKind.DELIVERY_RESTARTED:
            self._restarts_told += 1
        elif kind == "alert":
            self.on_alert(Alert(msg["kind"], int(msg["iteration"]), msg["text"], float(msg["time_s"])))
        elif kind == "print":
            stream = sys.stdout if msg["stream"] == "stdout" else sys.stderr
            stream.write(msg["text"])
            stream.flush()

    def _died(self) -> None:
        said = self._how_it_ended()
        if self.restarts.used:
            said += f" after {self.restarts.used} restarts (at most {self.restarts.limit} within {self.restarts.window_s / 60:.0f} min)"
        for w in self.workers:
            w.disabled = w.done = True
            w.last_error = w.last_error or said
        if not self._killed:  # past the exit deadline the run's own report names what was left undelivered
            log.warning(
                "primus tracking: %s; these trackers get nothing more from this run. Every record is in %s: "
                "deliver it with `primus tracking sync %s`.",
                said,
                self.run_dir / JOURNAL_DIR,
                redact_text(str(self.run_dir)),
            )


def first_step(reader: JournalReader, offset: int) -> int | None:
    """The step of the first metrics record from ``offset`` (None: the journal ends first)."""
    records, _ = reader.read(offset, max_bytes=FIRST_STEP_BYTES)
    return next((r.step for r in records if r.kind == METRICS), None)


def take_delivery_lock(run_dir: Path) -> int:
    """A descriptor of the delivery lock, locked when no earlier launch's delivery process holds it (the child
    waits for it then). Locked here, it passes to the child with no moment unheld."""
    fd = delivery_lock(run_dir)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass
    return fd


def child_environment() -> dict[str, str]:
    """The job's environment (credentials included: the trackers need them), with Primus importable from
    where this process imports it and without patch activation (the child runs no upstream code)."""
    env = dict(os.environ)
    env.pop("PRIMUS_ACTIVATE", None)  # primus.activation.ACTIVATE_ENV (importing that module loads wrapt)
    source_root = str(Path(primus.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([source_root, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    return env
