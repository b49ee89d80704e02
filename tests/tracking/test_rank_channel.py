"""The ranks' figures through the job's store (primus.tracking.measure.rank_channel): rows as the store keeps them,
the gathering of a step (late, missing, duplicate, restarted ranks) on a real TCPStore with one channel per rank,
flat and through nodes (a node's ranks to its local rank 0's store, one block per node: missing and dying nodes),
and that the training thread never touches the store."""

from __future__ import annotations

import math
import threading
import time
from datetime import timedelta

import pytest
import torch.distributed as dist
from hypothesis import given, settings
from hypothesis import strategies as st
from support.mlflow_server import free_port

from primus.tracking.measure.rank_channel import (NODE_SHARE, Node, RankChannel, Row, arrivals, decode_rows,
                                                  node_from_env)

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
    """A real TCPStore server and one channel per rank, each with its own client, as in a job: flat, or ``nodes``
    nodes of ``world_size / nodes`` ranks each (ranks numbered node by node, as torchrun does); ``absent`` ranks
    have no channel (a process that never reached its first log step)."""

    def __init__(self, world_size: int, bound_s: float = 5.0, namespace: str = "t", nodes: int = 0, writer: int = 0,
                 absent: tuple[int, ...] = ()):
        self.port = free_port()
        self.server = dist.TCPStore("127.0.0.1", self.port, is_master=True, wait_for_workers=False,
                                    timeout=timedelta(seconds=30))
        self.gathered: list = []
        self.done = threading.Semaphore(0)
        per_node = world_size // nodes if nodes else 0
        self.channels = {
            rank: RankChannel(self.client, rank, world_size, on_gathered=self._got if rank == writer else None,
                              namespace=namespace, bound_s=bound_s, host=f"node-{rank}",
                              node=Node(rank // per_node, rank % per_node, per_node, nodes) if nodes else None)
            for rank in range(world_size) if rank not in absent
        }
        # a TCPStore client's connection sometimes takes 5 s here: a step's bound starts when every rank is connected
        for rank, channel in self.channels.items():
            if not nodes or rank // per_node * per_node not in absent:  # else its node's store is never served
                assert channel.connected.wait(WAIT_S), f"rank {rank}'s channel never reached its stores"

    def client(self):
        return dist.TCPStore("127.0.0.1", self.port, is_master=False, wait_for_workers=False,
                             timeout=timedelta(seconds=30))

    def publish(self, step: int, ranks=None) -> None:
        for rank in self.channels if ranks is None else ranks:
            self.channels[rank].publish(step, [float(rank), float(step)])

    def _got(self, got) -> None:
        self.gathered.append(got)
        self.done.release()

    def wait_gathered(self) -> object:
        assert self.done.acquire(timeout=WAIT_S), "the writing rank's thread gathered nothing"
        return self.gathered[-1]

    def close(self) -> None:
        for c in self.channels.values():
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
        job.channels[1].publish(1, [1.0])  # in the store before the writer gathers step 1: no bound to beat
        deadline = time.monotonic() + WAIT_S
        while not job.server.check(["primus/rank_figures/t/0", "primus/rank_figures/t/1"]):
            assert time.monotonic() < deadline, "rank 1's rows never reached the store"
            time.sleep(0.01)
        job.channels[0].publish(1, [1.0])
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


@pytest.mark.parametrize(("env", "node"), [
    ({"GROUP_RANK": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8", "GROUP_WORLD_SIZE": "4"}, Node(1, 0, 8, 4)),
    ({"GROUP_RANK": "0", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8", "GROUP_WORLD_SIZE": "1"}, None),  # one node
    ({"GROUP_RANK": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_WORLD_SIZE": "4"}, None),  # a rank a node
    ({"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8"}, None),  # not torchrun's: the node is not known
    ({"GROUP_RANK": "x", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8", "GROUP_WORLD_SIZE": "4"}, None),
])
def test_the_node_is_torchrun_s_when_the_job_has_several_nodes_of_several_ranks(env, node):
    assert node_from_env(env) == node


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.randoms(use_true_random=False), st.data())
def test_through_nodes_every_rank_s_row_reaches_the_writing_rank_whatever_the_layout_and_order(nodes, per_node,
                                                                                           rng, data):
    world = nodes * per_node
    job = Job(world, nodes=nodes, writer=data.draw(st.integers(0, world - 1)))
    try:
        for step in range(2):
            order = list(range(world))
            rng.shuffle(order)
            job.publish(step, order)
            got = job.wait_gathered()
            assert got.step == step and got.missing == () and got.duplicates == 0
            assert {r: row.values for r, row in got.rows.items()} == {r: (float(r), float(step)) for r in range(world)}
    finally:
        job.close()


def test_through_nodes_the_job_s_store_serves_one_block_per_node_and_every_key_is_removed():
    job = Job(6, nodes=2, writer=5)  # the writer is not its node's local rank 0 (Megatron's last rank)
    try:
        job.publish(0)
        job.wait_gathered()
        before = {rank: c.counts.store_ops for rank, c in job.channels.items()}
        for step in (1, 2, 3):
            job.publish(step)
            assert job.wait_gathered().missing == ()
        added = {rank: c.counts.store_ops - before[rank] for rank, c in job.channels.items()}
        # a node's local rank 0: one append and one add per step; its other ranks: none (but the writer's gather)
        assert added == {0: 6, 1: 0, 2: 0, 3: 6, 4: 0, 5: added[5]}, added
        assert all(job.channels[rank].counts.node_ops >= 2 * 4 for rank in range(6))
        assert job.channels[5].counts.complete == 4
        assert not any(job.server.check([f"primus/rank_figures/t/{step}"]) for step in range(4))
    finally:
        job.close()


def test_a_node_that_never_publishes_names_all_its_ranks_missing_within_the_bound_and_is_not_waited_for_again():
    bound_s = 2.0  # waited once; a wait at the next step would take as long, however loaded the machine is
    job = Job(4, bound_s=bound_s, nodes=2, absent=(2,))  # node 1's local rank 0 never came: its other rank cannot send
    try:
        started = time.monotonic()
        job.publish(0)
        got = job.wait_gathered()
        assert got.missing == (2, 3) and sorted(got.rows) == [0, 1]
        assert bound_s <= time.monotonic() - started < WAIT_S
        started = time.monotonic()
        job.publish(1)
        assert job.wait_gathered().missing == (2, 3)
        assert time.monotonic() - started < bound_s  # the node that did not answer is not waited for again
    finally:
        job.close()


def test_a_node_s_local_rank_0_that_dies_costs_the_other_nodes_one_bound_then_its_ranks_are_named_missing():
    job = Job(4, bound_s=1.0, nodes=2)
    try:
        job.publish(0)
        assert job.wait_gathered().missing == ()
        job.channels.pop(2).close()  # its process ends: its node's store with it
        started = time.monotonic()
        job.publish(1)
        got = job.wait_gathered()
        assert got.missing == (2, 3) and time.monotonic() - started < WAIT_S
        job.publish(2)
        assert job.wait_gathered().missing == (2, 3)
        assert job.channels[3].failed is not None  # its node's store went away: its figures stop, training not
    finally:
        job.close()


def test_a_rank_missing_from_its_node_is_named_and_the_node_s_block_is_not_held_past_its_share_of_the_bound():
    job = Job(4, bound_s=1.0, nodes=2)
    try:
        started = time.monotonic()
        job.publish(0, [0, 1, 2])
        got = job.wait_gathered()
        assert got.missing == (3,) and sorted(got.rows) == [0, 1, 2]
        waited = time.monotonic() - started
        assert NODE_SHARE * 1.0 <= waited < WAIT_S
        assert job.channels[0].counts.complete == 0 and job.channels[0].counts.incomplete == 1
        job.channels[3].publish(0, [3.0])  # late: counted by its node's local rank 0 at the next step
        job.channels[3].publish(1, [3.0])  # and in time for the next (in before its node's other rank is)
        deadline = time.monotonic() + WAIT_S
        while job.channels[3].counts.node_ops < 4:
            assert time.monotonic() < deadline, "rank 3's rows never reached its node's store"
            time.sleep(0.01)
        job.publish(1, [0, 1, 2])
        assert job.wait_gathered().missing == ()
        assert job.channels[2].counts.late_rows == 1
    finally:
        job.close()


def test_a_rank_missing_then_late_is_waited_for_again_once_its_late_row_is_seen():
    """Not waited for after it missed a step, it would stay missing at every step that its row comes a moment after
    the others' (which the not-waiting gathers at once): its late row puts it back among the awaited."""
    job = Job(2, bound_s=2.0)
    try:
        job.publish(0, [0])
        assert job.wait_gathered().missing == (1,)
        job.publish(0, [1])  # late
        deadline = time.monotonic() + WAIT_S
        while not job.server.check(["primus/rank_figures/t/0"]):
            assert time.monotonic() < deadline, "the late row never reached the store"
            time.sleep(0.01)
        job.publish(1, [0])  # not waited for: gathered at once; step 0's late row is seen
        assert job.wait_gathered().missing == (1,)
        job.publish(2, [0])
        time.sleep(0.3)  # a moment after the other rank, well within the bound
        job.publish(2, [1])
        assert job.wait_gathered().missing == ()
    finally:
        job.close()
