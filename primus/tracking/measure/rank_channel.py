"""Every rank's log-step figures (busy time, memory, utilisation, host) reach the writing rank through the job's own
key-value store (torch.distributed's rendezvous TCPStore), not a collective: a collective per log step blocks the
training thread of every rank on the slowest, and is one more place a job can hang. The training thread only queues
its row; this module's own thread per rank appends it (one append and one add), and the writing rank's thread
gathers the step, polling a counter, for at most ``bound_s`` (what did not answer at the previous step is not
waited for again until it answers, late or not), then names the ranks that did not answer. Its own client connection (not the job's, whose
operations are serialised) with its own timeout: nothing of the training thread ever waits on it.

With several nodes of several ranks (torchrun's env), a node's ranks append to a store served by the node's local
rank 0 and it appends them to the job's store as one block: the job's single store thread serves O(nodes)
operations per log step, not O(ranks). Not the hub's thread: only the writing rank has a hub, and a store that stops
answering must not hold up the journal. docs/tracking-internals.md#stragglers gives the cost
(benchmarks/rank_gather.py)."""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

log = logging.getLogger("primus.tracking")

BOUND_S = 5.0  # the longest the writing rank's thread waits for a step's rows
NODE_SHARE = 0.6  # of the bound, the longest a node's local rank 0 waits for its node's rows: its block then has time
STORE_TIMEOUT_S = 30.0  # of this module's own store clients: a store that stops answering stops the channel
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


@dataclass(frozen=True)
class Node:
    """This rank's node among several (torchrun's GROUP_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_WORLD_SIZE)."""

    index: int
    local_rank: int
    local_size: int
    count: int  # the job's nodes

    @property
    def leads(self) -> bool:
        return self.local_rank == 0


def node_from_env(env: Mapping[str, str] = os.environ) -> Node | None:
    """This rank's node when the job has several nodes of several ranks (as torchrun says); else None, each rank
    appending its own row to the job's store: on one node the job's store is on it already, with one rank per node
    there is nothing to combine, and without torchrun's env the node is not known."""
    try:
        names = ("GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE")
        node = Node(*(int(env[name]) for name in names))
    except (KeyError, ValueError):
        return None
    return node if node.count > 1 and node.local_size > 1 else None


@dataclass
class ChannelCounts:
    """What this rank's thread saw: for the benchmark and the run's end."""

    complete: int = 0  # (the writing rank) steps every rank answered within the bound
    incomplete: int = 0
    late_rows: int = 0  # rows that came after their step was gathered (at the job's store, or a node's it serves)
    store_ops: int = 0  # this rank's operations on the job's store
    node_ops: int = 0  # on its node's store
    busy_s: float = 0.0  # this rank's thread CPU time in the channel's work


class _Stage:
    """One level of the gathering on one store: blocks of rows appended to a step's key and counted; the gathering
    thread waits for ``expected`` of them (less those that did not answer at the previous step) until a deadline,
    reads the key once, removes it, and sweeps the previous step's key once more for late rows."""

    def __init__(self, prefix: str, expected: int, stopping: threading.Event) -> None:
        self._prefix, self._expected, self._stopping = prefix, expected, stopping
        self._awaited = expected
        self._swept: int | None = None  # the last gathered step, swept once more at the next for late rows
        self.ops = 0
        self.late_rows = 0

    def _key(self, step: int) -> str:
        return f"{self._prefix}/{step}"

    def deliver(self, store: Any, step: int, blob: bytes) -> None:
        store.append(self._key(step), blob)
        store.add(self._key(step) + "/n", 1)
        self.ops += 2

    def gather(self, store: Any, step: int, deadline: float) -> list[Row]:
        """The step's rows, awaited until ``deadline`` (a thread that fell behind catches up: older steps' deadlines
        have passed)."""
        key = self._key(step)
        pause = _FIRST_POLL_S
        while True:
            arrived = store.add(key + "/n", 0)
            self.ops += 1
            if arrived >= self._awaited or time.monotonic() >= deadline or self._stopping.is_set():
                break
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _LAST_POLL_S)
        rows = decode_rows(store.get(key)) if arrived else []
        self._remove(store, key)
        self.ops += 1 if arrived else 0
        came_back = self._sweep(store)
        self._swept = step
        # those that answered, in time or late (a late one is waited for again): at least the gathering rank's own
        self._awaited = max(1, min(arrived + came_back, self._expected))
        return rows

    def _remove(self, store: Any, key: str) -> None:
        store.delete_key(key), store.delete_key(key + "/n")
        self.ops += 2

    def _sweep(self, store: Any) -> int:
        """Rows of the previous step that came after it was gathered: counted, and their keys removed. Returns how
        many blocks came late."""
        if self._swept is None:
            return 0
        key = self._key(self._swept)
        self.ops += 1
        if not store.check([key]):
            return 0
        self.late_rows += len(decode_rows(store.get(key)))
        came = store.add(key + "/n", 0)
        self.ops += 2
        self._remove(store, key)
        return came


class RankChannel:
    """One per rank: ``publish`` (training thread: a queue put) and, on the writing rank, ``on_gathered`` called on
    this channel's thread with each step's ``Arrivals``. ``node``: the rank's node, its rows through the node's
    local rank 0 (``node_from_env``); None: straight to the job's store."""

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
        node: Node | None = None,
    ) -> None:
        self._connect = connect  # on this channel's thread: the store client
        self.rank, self.world_size = rank, world_size
        self._on_gathered = on_gathered  # set on the writing rank only
        self._prefix = f"{PREFIX}/{namespace or os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        self._bound_s = bound_s
        self._host = host
        self._node = node
        self._incarnation = f"{os.getpid()}@{host}"
        # (step, row, when the rank reached the step): a step's rows are awaited until bound_s after that
        self._queue: queue.SimpleQueue[tuple[int, tuple[float, ...], float] | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._job = _Stage(self._prefix, node.count if node is not None else world_size, self._stopping)
        self._local = _Stage(self._prefix, node.local_size if node is not None else 1, self._stopping)
        self._complete = self._incomplete = 0
        self._busy_s = 0.0
        self.failed: str | None = None
        self.connected = threading.Event()  # its stores reached (a TCPStore client may take seconds to connect)
        self._thread = threading.Thread(target=self._main, name="primus-rank-figures", daemon=True)
        self._thread.start()
        # a daemon thread inside a store call when the interpreter finalises aborts the process (the call, which
        # released the GIL, cannot unwind back into Python): it is stopped before that
        atexit.register(self.close)

    @property
    def counts(self) -> ChannelCounts:
        late = self._job.late_rows + self._local.late_rows
        return ChannelCounts(self._complete, self._incomplete, late, self._job.ops, self._local.ops, self._busy_s)

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
            node_store = self._node_store(store) if self._node is not None else None
            self.connected.set()
            while (item := self._queue.get()) is not None:
                started = time.thread_time()
                self._step(store, node_store, *item)
                self._busy_s += time.thread_time() - started
        except Exception as error:  # the store went away (the job ends) or refuses: the figures stop, training not
            self.failed = repr(error)
            log.info("primus tracking: the ranks' figures stop (%s)", self.failed)

    def _step(self, store: Any, node_store: Any, step: int, values: tuple[float, ...], reached: float) -> None:
        row = Row(self.rank, step, self._incarnation, self._host, values).encode()
        if node_store is None:
            self._job.deliver(store, step, row)
        else:
            self._local.deliver(node_store, step, row)
            if self._node is not None and self._node.leads:  # the node's rows as one block
                rows = self._local.gather(node_store, step, reached + self._bound_s * NODE_SHARE)
                block = arrivals(step, self.world_size, rows).rows.values()
                self._job.deliver(store, step, b"".join(r.encode() for r in block))
        if self._on_gathered is not None:
            got = arrivals(step, self.world_size, self._job.gather(store, step, reached + self._bound_s))
            if got.missing:
                self._incomplete += 1
            else:
                self._complete += 1
            self._on_gathered(got)

    def _node_store(self, store: Any) -> Any:
        """The node's store: served by its local rank 0 on a free port, told to the node's other ranks through the
        job's store (once), which await it as long as a store call may take."""
        import torch.distributed as dist

        assert self._node is not None
        key, timeout = f"{self._prefix}/node/{self._node.index}", timedelta(seconds=STORE_TIMEOUT_S)
        if self._node.leads:
            server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timeout)
            store.set(key, str(server.port))
            self._job.ops += 1
            return server
        deadline, pause = time.monotonic() + STORE_TIMEOUT_S, _FIRST_POLL_S
        while not store.check([key]):  # short calls, not one long wait: close() must find the thread out of the store
            self._job.ops += 1
            if time.monotonic() >= deadline or self._stopping.is_set():
                raise TimeoutError(f"node {self._node.index}'s local rank 0 did not serve its node's store")
            time.sleep(pause)
            pause = min(pause * 2, _LAST_POLL_S)
        self._job.ops += 2
        return dist.TCPStore("127.0.0.1", int(store.get(key)), is_master=False, wait_for_workers=False, timeout=timeout)


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
