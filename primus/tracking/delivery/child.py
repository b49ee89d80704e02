"""The delivery process's main (see ``process.py``):
``python -m primus.tracking.delivery.child REPLIES_FD DIRECT_FD LOCK_FD``.

It ignores SIGINT and SIGTERM (a job stopping sends them to every process; the training process then
asks this one to close, within its exit deadline) and ends when told to close or when its input ends.
What the tracker clients print here goes to the training process, which prints it (see ``ForwardedStream``).
``deliver`` is one run's delivery, with the journal followers it is given (``tracking/features.py``: the health
watch); the node's shared delivery process (``node_main``) runs one per rank it serves, on a thread each.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any, NoReturn

from primus.redaction import redact_text
from primus.tracking.delivery.process import DeliverySpec, message, sink_stats
from primus.tracking.delivery.worker import SinkWorker
from primus.tracking.features import delivery_followers
from primus.tracking.journal.followers import Follower
from primus.tracking.journal.reader import journal_end, last_end_status
from primus.tracking.journal.records import RunStatus, decode
from primus.tracking.journal.run_state import CursorStore, RunState
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.registry import build_sinks

# Below the trainer: where cores are short (a small box, a CPU job, JAX's thread pool using every core) the
# scheduler gives them to training first; delivery lags and catches up from the journal. Idle cores: no effect.
NICENESS = 10
STATS_S = 0.5  # how often changed sink stats are sent to the training process


class Replies:
    """JSON lines to the training process; a vanished reader is ignored (the work goes on)."""

    def __init__(self, fd: int):
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, obj: dict) -> bool:
        """False when the training process is gone (or this run's delivery ended)."""
        data = message(obj)
        with self._lock:
            if self._fd < 0:
                return False
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                return False
        return True

    def close(self) -> None:
        """Closed with a late sender in mind (a flush answered after the end): its descriptor number may be
        reused for another run's pipe."""
        with self._lock:
            os.close(self._fd)
            self._fd = -1


class Routes:
    """Which training process hears what a thread of this process logs or prints: the one run's, in a private
    delivery process; in the node's shared one, the run whose delivery started that thread, and every run's
    when a thread is no run's own (a tracker client's)."""

    def __init__(self):
        self._by_thread: dict[threading.Thread, Replies] = {}
        self._runs: list[Replies] = []
        self._lock = threading.Lock()

    def add(self, replies: Replies, threads: Iterable[threading.Thread]) -> None:
        with self._lock:
            self._runs.append(replies)
            self._by_thread.update((t, replies) for t in threads)

    def add_threads(self, replies: Replies, threads: Iterable[threading.Thread]) -> None:
        with self._lock:
            self._by_thread.update((t, replies) for t in threads)

    def remove(self, replies: Replies) -> None:
        with self._lock:
            self._runs.remove(replies)
            self._by_thread = {t: r for t, r in self._by_thread.items() if r is not replies}

    def here(self) -> list[Replies]:
        with self._lock:
            mine = self._by_thread.get(threading.current_thread())
            return [mine] if mine is not None else list(self._runs)

    def send(self, obj: dict) -> bool:
        """False when no training process took it."""
        return any([r.send(obj) for r in self.here()])  # a list: every one is sent to


class ForwardLogs(logging.Handler):
    def __init__(self, routes: Routes):
        super().__init__()
        self.routes = routes

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # noqa: BLE001 - a bad format string must not stop a sink
            text = str(record.msg)
        self.routes.send({"t": "log", "name": record.name, "level": record.levelno, "msg": text})


class ForwardedStream:
    """This process's ``sys.stdout`` / ``sys.stderr``. W&B and MLflow print here (W&B's start and sync lines,
    MLflow's warnings); each whole line, redacted, is printed by the training process on its own stream,
    so its console capture (``mlflow_upload_logs``) holds it as it did when the sinks were its threads.
    Once the training process is gone, lines go to the console directly, still redacted."""

    def __init__(self, name: str, routes: Routes, stream):
        self.name = name
        self.routes = routes
        self.stream = stream
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            lines, sep, self._partial = (self._partial + text).rpartition("\n")
            if sep:
                self._emit(lines + sep)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._partial:
                self._emit(self._partial)
                self._partial = ""

    def _emit(self, text: str) -> None:
        text = redact_text(text)
        if not self.routes.send({"t": "print", "stream": self.name, "text": text}):
            self.stream.write(text)
            self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def stats(workers: Iterable[SinkWorker], done: dict[str, bool] | None = None) -> dict[str, dict]:
    return {w.name: {**sink_stats(w), "cursor": w.cursor, "done": bool(done and done.get(w.name))} for w in workers}


def report_stats(workers: list[SinkWorker], replies: Replies, stop: threading.Event) -> None:
    """Tell the training process how far the workers got, when it changed, until ``stop``."""
    sent = None
    while True:
        if (current := stats(workers)) != sent:
            replies.send({"t": "stats", "sinks": current})
            sent = current
        if stop.wait(STATS_S):
            return


def serve(
    commands, workers: list[SinkWorker], followers: list[Follower], replies: Replies, end: int
) -> tuple[str, float] | None:
    """Tell the workers and followers each time the journal grew (the hub's one signal, "grew", from ``end`` on),
    answer flush and watch requests until told to close: returns (status, seconds left), or None at end of input."""
    by_name = {w.name: w for w in workers}
    readers: list[SinkWorker | Follower] = [*workers, *followers]
    for line in commands:
        msg = json.loads(line)
        if msg["t"] == "close":
            return msg["status"], float(msg["within_s"])
        if (grown := int(msg.get("end", msg.get("offset", 0)))) > end:  # a flush's offset too: a lost "grew"
            end = grown
            for reader in readers:
                reader.notify(end)
        if msg["t"] == "flush" and msg["sink"] in by_name:
            done = by_name[msg["sink"]].request_flush(int(msg["offset"]))
            threading.Thread(target=answer_flush, args=(done, msg["id"], workers, replies), daemon=True).start()
        elif msg["t"] == "watch":  # the run is ending: the followers catch up (the health watch's alerts sent first)
            for follower in followers:
                follower.ending(True)
            answer_flush(None, msg["id"], workers, replies)
        elif msg["t"] == "flush":
            answer_flush(None, msg["id"], workers, replies)
    return None


def receive_direct(pipe, workers: list[SinkWorker]) -> None:
    """Records the journal could not take, from the training process, to every worker; ends with its "end"
    message (or the pipe's end, when the training process died), and closes the pipe."""
    with pipe:
        for header in pipe:
            msg = json.loads(header)
            if msg["t"] == "end":
                return
            lines = [pipe.readline() for _ in range(msg["n"])]
            records = [decode(line, msg["after"]) for line in lines]
            for w in workers:
                w.deliver_direct(msg["after"], records)


def answer_flush(done: threading.Event | None, flush_id: int, workers: list[SinkWorker], replies: Replies) -> None:
    if done is not None:
        done.wait()
    replies.send({"t": "flushed", "id": flush_id, "sinks": stats(workers)})  # how far each got, as of now


def configure_process(routes: Routes, log_level: int) -> None:
    """What every delivery process does first: no job signal stops it, training gets the cores first, and the
    logs and prints of the tracker clients go to the training processes."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    os.nice(NICENESS)
    root = logging.getLogger("primus")
    root.handlers[:] = [ForwardLogs(routes)]
    root.setLevel(log_level)
    root.propagate = False
    root._primus_configured = True  # type: ignore[attr-defined]  # primus.log.get_logger adds no console handler
    sys.stdout = ForwardedStream("stdout", routes, sys.stdout)
    sys.stderr = ForwardedStream("stderr", routes, sys.stderr)


def deliver(
    spec: DeliverySpec,
    commands,
    replies: Replies,
    direct_pipe,
    lock_fd: int,
    started: Callable[[list[threading.Thread]], None],
    shared: dict[str, Any] | None = None,
) -> bool:
    """One run's delivery, from its training process's pipes, until told to close or its input ends; True when
    every sink ended in time. ``started``: called with the threads that call a sink or tell of an alert, once
    they run; ``shared``: what the followers of the runs a process delivers share (``tracking/features.py``)."""
    cfg = spec.config
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # held until the run is delivered; an earlier launch's finishes first
    state = RunState(cfg.run_dir)
    try:
        state.update("run", delivery_pid=os.getpid())  # which process delivers it (several runs may share one)
    except OSError:  # a full disk: delivery matters more than this note
        pass
    sinks = build_sinks(spec.sinks, cfg, RunMeta.load(cfg.run_dir), state)
    cursors = CursorStore(cfg.run_dir)
    workers = [SinkWorker(s, cfg.run_dir, cursors) for s in sinks]
    for w in workers:
        w.start()
    followers = delivery_followers(
        cfg,
        spec.journal_from,
        spec.restarted,
        raised=lambda alert: replies.send({"t": "alert", **asdict(alert)}),
        told=lambda alert: replies.send({"t": "told", "kind": str(alert.kind)}),
        shared={} if shared is None else shared,
    )
    started([*(w.thread for w in workers), *(t for f in followers for t in f.start())])
    readers: list[SinkWorker | Follower] = [*workers, *followers]  # told each time the journal grew
    end = journal_end(cfg.run_dir)  # what the journal held before this process: later, the hub says it grew
    for reader in readers:
        reader.notify(end)
    reported = threading.Event()
    threading.Thread(
        target=report_stats, args=(workers, replies, reported), name="primus-delivery-stats", daemon=True
    ).start()
    direct = threading.Thread(
        target=receive_direct, args=(direct_pipe, workers), name="primus-delivery-direct", daemon=True
    )
    direct.start()

    asked = serve(commands, workers, followers, replies, end)
    trainer_died = False
    if asked is None:  # the training process died without closing: end as its journal says, else KILLED
        ended = last_end_status(cfg.run_dir)
        trainer_died = ended is None
        status, within_s = ended or RunStatus.KILLED, cfg.exit_deadline_s
        if state.section("run").get("status") == RunStatus.RUNNING:
            try:
                state.update("run", status=status)
            except OSError:  # a full disk: the trackers still get the status; sync reads RUNNING as KILLED
                pass
    else:
        status, within_s = asked
    deadline = time.monotonic() + within_s
    direct.join(within_s)  # the records not journaled that are still in the pipe come first
    end = journal_end(cfg.run_dir)
    for reader in readers:
        reader.notify(end)
    for w in workers:
        w.close(status, deadline)
    for follower in followers:  # the alerts the trainer journaled at its end (failed, killed) told meanwhile
        follower.close(deadline, trainer_died)
    done = {w.name: w.join(deadline) for w in workers}
    reported.set()
    replies.send({"t": "closed", "sinks": stats(workers, done)})
    return all(done.values())


def main(argv: list[str]) -> int:
    replies = Replies(int(argv[1]))
    commands = sys.stdin.buffer
    spec = DeliverySpec.decode(commands.readline())
    routes = Routes()
    routes.add(replies, ())
    configure_process(routes, spec.log_level)
    deliver(spec, commands, replies, os.fdopen(int(argv[2]), "rb"), int(argv[3]), lambda workers: None)
    exit_process()


def exit_process() -> NoReturn:
    logging.shutdown()
    os._exit(0)  # daemon threads still blocked in a tracker client must not hold the exit


if __name__ == "__main__":
    main(sys.argv)
