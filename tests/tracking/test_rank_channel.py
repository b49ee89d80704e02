"""The ranks' figures through the job's store (primus.tracking.measure.rank_channel): rows as the store keeps them,
the gathering of a step (late, missing, duplicate, restarted ranks) on a real TCPStore with one channel per rank,
and that the training thread never touches the store."""

from __future__ import annotations

import math
import threading
import time
from datetime import timedelta

import torch.distributed as dist
from hypothesis import given
from hypothesis import strategies as st
from support.mlflow_server import free_port

from primus.tracking.measure.rank_channel import RankChannel, Row, arrivals, decode_rows

WAIT_S = 30.0  # the most a test waits for a channel's thread to gather what it was given


def _row(rank: int, step: int = 0, incarnation: str = "1@h", values=(1.0,)) -> Row:
    return Row(rank, step, incarnation, "h", tuple(values))


finite_or_nan = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.just(math.nan))


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5), st.text(max_size=8), st.text(max_size=8),
                          st.lists(finite_or_nan, max_size=4))))
def test_rows_come_back_from_the_bytes_the_store_keeps(fields):
    rows = [Row(rank, step, incarnation, host, tuple(values)) for rank, step, incarnation, host, values in fields]
    back = decode_rows(b"".join(r.encode() for r in rows))
    assert [(r.rank, r.step, r.incarnation, r.host) for r in back] == [(r.rank, r.step, r.incarnation, r.host)
                                                                      for r in rows]
    for got, sent in zip(back, rows):
        assert all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got.values, sent.values))


def test_a_malformed_line_is_skipped():
    assert decode_rows(b"not json\n" + _row(1).encode() + b"[1, 2]\n") == [_row(1)]


@given(st.integers(1, 12), st.lists(st.tuples(st.integers(-1, 14), st.integers(0, 2), st.integers(0, 3))))
def test_each_rank_s_last_row_of_the_step_wins_and_the_rest_are_missing(world_size, published):
    rows = [_row(rank, step, f"{pid}@h", (float(i),)) for i, (rank, step, pid) in enumerate(published)]
    got = arrivals(1, world_size, rows)
    of_step = [r for r in rows if r.step == 1 and 0 <= r.rank < world_size]
    last = {r.rank: r for r in of_step}
    assert got.rows == last
    assert set(got.missing) == set(range(world_size)) - set(last) and list(got.missing) == sorted(got.missing)
    assert got.duplicates == len(of_step) - len(last)


def test_a_restarted_rank_s_newest_row_replaces_its_earlier_one():
    got = arrivals(0, 2, [_row(0), _row(1, incarnation="10@h", values=(5.0,)), _row(1, incarnation="11@h")])
    assert got.rows[1].incarnation == "11@h" and got.rows[1].values == (1.0,) and got.duplicates == 1


class Job:
    """A real TCPStore server and one channel per rank, each with its own client, as in a job."""

    def __init__(self, world_size: int, bound_s: float = 5.0, namespace: str = "t"):
        self.port = free_port()
        self.server = dist.TCPStore("127.0.0.1", self.port, is_master=True, wait_for_workers=False,
                                    timeout=timedelta(seconds=30))
        self.gathered: list = []
        self.done = threading.Semaphore(0)
        self.channels = [
            RankChannel(self.client, rank, world_size, on_gathered=self._got if rank == 0 else None,
                        namespace=namespace, bound_s=bound_s, host=f"node-{rank}")
            for rank in range(world_size)
        ]

    def client(self):
        return dist.TCPStore("127.0.0.1", self.port, is_master=False, wait_for_workers=False,
                             timeout=timedelta(seconds=30))

    def _got(self, got) -> None:
        self.gathered.append(got)
        self.done.release()

    def wait_gathered(self) -> object:
        assert self.done.acquire(timeout=WAIT_S), "the writing rank's thread gathered nothing"
        return self.gathered[-1]

    def close(self) -> None:
        for c in self.channels:
            c.close()


def test_every_rank_s_row_reaches_the_writing_rank_and_the_keys_are_removed():
    job = Job(4)
    try:
        for step in range(3):
            for rank in (3, 1, 2, 0):
                job.channels[rank].publish(step, [float(rank), float(step)])
            got = job.wait_gathered()
            assert got.step == step and got.missing == () and got.duplicates == 0
            assert {r: row.values for r, row in got.rows.items()} == {r: (float(r), float(step)) for r in range(4)}
            assert got.rows[2].host == "node-2"
        counts = job.channels[0].counts
        assert (counts.complete, counts.incomplete, counts.late_rows) == (3, 0, 0)
        assert not job.server.check(["primus/rank_figures/t/0"]) and not job.server.check(["primus/rank_figures/t/2"])
    finally:
        job.close()


def test_a_rank_that_never_publishes_is_named_missing_within_the_bound_and_not_waited_for_again():
    job = Job(3, bound_s=0.5)
    try:
        started = time.monotonic()
        for rank in (0, 1):
            job.channels[rank].publish(0, [1.0])
        got = job.wait_gathered()
        first = time.monotonic() - started
        assert got.missing == (2,) and sorted(got.rows) == [0, 1]
        assert 0.5 <= first < WAIT_S  # waited the bound for it, once
        for rank in (0, 1):
            job.channels[rank].publish(1, [1.0])
        got = job.wait_gathered()
        assert got.missing == (2,)  # the next step: gathered as soon as the ranks that answered last time have
        assert job.channels[0].counts.incomplete == 2
    finally:
        job.close()


def test_a_late_row_is_counted_at_the_next_step_and_its_key_removed():
    job = Job(2, bound_s=0.2)
    try:
        job.channels[0].publish(0, [1.0])
        assert job.wait_gathered().missing == (1,)
        job.channels[1].publish(0, [2.0])  # after its step was gathered
        deadline = time.monotonic() + WAIT_S
        while not job.server.check(["primus/rank_figures/t/0"]):
            assert time.monotonic() < deadline, "the late row never reached the store"
            time.sleep(0.01)
        for rank in (0, 1):
            job.channels[rank].publish(1, [1.0])
        got = job.wait_gathered()
        assert got.missing == () and job.channels[0].counts.late_rows == 1
        assert not job.server.check(["primus/rank_figures/t/0"])
    finally:
        job.close()


def test_the_training_thread_never_calls_the_store():
    threads: list[str] = []

    class Store:
        def __init__(self):
            self.data: dict[str, bytes] = {}

        def append(self, key, value):
            threads.append(threading.current_thread().name)
            self.data[key] = self.data.get(key, b"") + value

        def add(self, key, n):
            threads.append(threading.current_thread().name)
            self.data[key] = str(int(self.data.get(key, b"0")) + n).encode()
            return int(self.data[key])

        def get(self, key):
            return self.data[key]

        def check(self, keys):
            return all(k in self.data for k in keys)

        def delete_key(self, key):
            return self.data.pop(key, None) is not None

    done = threading.Event()
    channel = RankChannel(Store, 0, 1, on_gathered=lambda got: done.set())
    channel.publish(0, [1.0])
    assert done.wait(WAIT_S)
    channel.close()
    assert threads and set(threads) == {"primus-rank-figures"}
