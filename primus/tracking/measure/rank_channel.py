"""Every rank's log-step figures (busy time, memory, utilisation, host) reach the writing rank through the job's own
key-value store (torch.distributed's rendezvous TCPStore), not a collective: a collective per log step blocks the
training thread of every rank on the slowest, and is one more place a job can hang. The training thread only queues
its row; this module's own thread per rank appends it to the store (one append and one add), and the writing rank's
thread gathers the step, polling a counter, for at most ``bound_s`` (ranks missing at the previous step are not
waited for again), then names the ranks that did not answer. Its own client connection (not the job's, whose
operations are serialised) with its own timeout: nothing of the training thread ever waits on it.

Not the hub's thread: only the writing rank has a hub, and a store that stops answering must not hold up the
journal. docs/tracking-internals.md#stragglers gives the cost, measured by benchmarks/rank_gather.py."""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

log = logging.getLogger("primus.tracking")

BOUND_S = 5.0  # the longest the writing rank's thread waits for a step's rows
STORE_TIMEOUT_S = 30.0  # of this module's own store client: a store that stops answering stops the channel
PREFIX = "primus/rank_figures"
_FIRST_POLL_S, _LAST_POLL_S = 0.002, 0.05


@dataclass(frozen=True)
class Row:
    """One rank's figures for one log step, as appended to the store (one JSON line)."""

    rank: int
    step: int  # the log step's index (every rank counts its log steps alike)
    incarnation: str  # the publishing process (pid@host): a restarted rank's rows replace its earlier ones
    host: str
    values: tuple[float, ...]

    def encode(self) -> bytes:
        # NaN as null: JSON has no NaN, and a row must stay one line
        values = [None if v != v else v for v in self.values]
        return (json.dumps([self.rank, self.step, self.incarnation, self.host, values]) + "\n").encode()


def decode_rows(blob: bytes) -> list[Row]:
    """The rows appended under one key, in the order they were appended; a malformed line is skipped."""
    rows = []
    for line in blob.decode(errors="replace").splitlines():
        try:
            rank, step, incarnation, host, values = json.loads(line)
            floats = tuple(float("nan") if v is None else float(v) for v in values)
            rows.append(Row(int(rank), int(step), str(incarnation), str(host), floats))
        except (ValueError, TypeError):
            continue
    return rows


@dataclass(frozen=True)
class Arrivals:
    """What the writing rank gathered for one log step."""

    step: int
    rows: dict[int, Row]  # by rank: each rank's last row of the step (a restarted rank's newest)
    missing: tuple[int, ...]  # ranks with no row within the bound
    duplicates: int  # rows that a later row of the same rank replaced (a retried or restarted rank)


def arrivals(step: int, world_size: int, rows: Iterable[Row]) -> Arrivals:
    """The step's rows by rank, the last appended winning; rows of another step or an unknown rank are ignored."""
    by_rank: dict[int, Row] = {}
    duplicates = 0
    for row in rows:
        if row.step != step or not 0 <= row.rank < world_size:
            continue
        duplicates += row.rank in by_rank
        by_rank[row.rank] = row
    return Arrivals(step, by_rank, tuple(r for r in range(world_size) if r not in by_rank), duplicates)


@dataclass
class ChannelCounts:
    """What the writing rank's thread saw: for the benchmark and the run's end."""

    complete: int = 0  # steps every rank answered within the bound
    incomplete: int = 0
    late_rows: int = 0  # rows that came after their step was gathered
    store_ops: int = 0  # this rank's store operations
    busy_s: float = 0.0  # this rank's thread CPU time in the channel's work


class RankChannel:
    """One per rank: ``publish`` (training thread: a queue put) and, on the writing rank, ``on_gathered`` called on
    this channel's thread with each step's ``Arrivals``."""

    def __init__(
        self,
        connect: Callable[[], Any],
        rank: int,
        world_size: int,
        *,
        on_gathered: Callable[[Arrivals], None] | None = None,
        namespace: str = "",
        bound_s: float = BOUND_S,
        host: str = "",
    ) -> None:
        self._connect = connect  # on this channel's thread: the store client
        self.rank, self.world_size = rank, world_size
        self._on_gathered = on_gathered  # set on the writing rank only
        self._prefix = f"{PREFIX}/{namespace or os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        self._bound_s = bound_s
        self._host = host
        self._incarnation = f"{os.getpid()}@{host}"
        # (step, row, when the rank reached the step): a step's rows are awaited until bound_s after that
        self._queue: queue.SimpleQueue[tuple[int, tuple[float, ...], float] | None] = queue.SimpleQueue()
        self._missing: set[int] = set()  # at the previous step: not waited for again until they answer
        self._swept: int | None = None  # the last gathered step, swept once more at the next for late rows
        self.counts = ChannelCounts()
        self.failed: str | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._main, name="primus-rank-figures", daemon=True)
        self._thread.start()
        # a daemon thread inside a store call when the interpreter finalises aborts the process (the call, which
        # released the GIL, cannot unwind back into Python): it is stopped before that
        atexit.register(self.close)

    # -- training thread -----------------------------------------------------------------
    def publish(self, step: int, values: Sequence[float]) -> None:
        if self.failed is None:
            self._queue.put((step, tuple(values), time.monotonic()))

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread once what is queued is published; gathers stop waiting (each ends at its next poll)."""
        atexit.unregister(self.close)
        self._stopping.set()
        self._queue.put(None)
        self._thread.join(timeout_s)

    # -- this channel's thread -----------------------------------------------------------
    def _main(self) -> None:
        try:
            store = self._connect()
            while (item := self._queue.get()) is not None:
                started = time.thread_time()
                step, values, reached = item
                self._publish(store, step, values)
                if self._on_gathered is not None:
                    self._on_gathered(self._gather(store, step, reached + self._bound_s))
                self.counts.busy_s += time.thread_time() - started
        except Exception as error:  # the store went away (the job ends) or refuses: the figures stop, training not
            self.failed = repr(error)
            log.info("primus tracking: the ranks' figures stop (%s)", self.failed)

    def _key(self, step: int) -> str:
        return f"{self._prefix}/{step}"

    def _publish(self, store: Any, step: int, values: tuple[float, ...]) -> None:
        row = Row(self.rank, step, self._incarnation, self._host, values)
        store.append(self._key(step), row.encode())
        store.add(self._key(step) + "/n", 1)
        self.counts.store_ops += 2

    def _gather(self, store: Any, step: int, deadline: float) -> Arrivals:
        """The step's rows, awaited until ``deadline`` (a thread that fell behind catches up: older steps' deadlines
        have passed)."""
        key = self._key(step)
        awaited = self.world_size - len(self._missing)
        pause = _FIRST_POLL_S
        while True:
            arrived = store.add(key + "/n", 0)
            self.counts.store_ops += 1
            if arrived >= awaited or time.monotonic() >= deadline or self._stopping.is_set():
                break
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _LAST_POLL_S)
        got = arrivals(step, self.world_size, decode_rows(store.get(key)))
        store.delete_key(key), store.delete_key(key + "/n")
        self.counts.store_ops += 3
        self._sweep(store)
        self._swept = step
        self._missing = set(got.missing)
        if got.missing:
            self.counts.incomplete += 1
        else:
            self.counts.complete += 1
        return got

    def _sweep(self, store: Any) -> None:
        """Rows of the previous step that came after it was gathered: counted, and their keys removed."""
        if self._swept is None:
            return
        key = self._key(self._swept)
        self.counts.store_ops += 1
        if store.check([key]):
            self.counts.late_rows += len(decode_rows(store.get(key)))
            store.delete_key(key), store.delete_key(key + "/n")
            self.counts.store_ops += 3


def job_store_client(timeout_s: float = STORE_TIMEOUT_S) -> Callable[[], Any]:
    """How this rank's channel reaches the job's store: a client of its own to the rendezvous TCPStore, else (a
    FileStore, a HashStore) the job's store object under a prefix. Read on the training thread when the process
    group is up (no I/O); the connection is made on the channel's thread."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    underlying = store
    while isinstance(underlying, dist.PrefixStore):
        underlying = underlying.underlying_store
    if isinstance(underlying, dist.TCPStore):
        host, port = underlying.host, underlying.port
        return lambda: dist.TCPStore(
            host, port, is_master=False, timeout=timedelta(seconds=timeout_s), wait_for_workers=False
        )
    return lambda: dist.PrefixStore("primus", store)
