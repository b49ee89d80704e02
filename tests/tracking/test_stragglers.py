"""The straggler figures (primus.tracking.measure.stragglers): the summary over ranks, the console line, and the busy
clock on two real gloo processes, one of them slowed by a sleep before a collective, their figures through the job's
store; a rank that never publishes."""

from __future__ import annotations

import math
import socket
import time

import pytest
from support.mlflow_server import free_port

from primus.tracking.measure import stragglers as straggler
from primus.tracking.measure.across_ranks import LogStepRanks
from primus.tracking.measure.stragglers import slowest_line, summary


def test_summary_names_the_rank_with_the_most_busy_time():
    assert summary([1.0, 4.0, 2.0, 2.0]) == {
        straggler.BUSY_MIN: 1.0, straggler.BUSY_MEDIAN: 2.0, straggler.BUSY_MAX: 4.0, straggler.SLOWEST_RANK: 1.0,
        straggler.SLOWEST_OVER_MEDIAN: 2.0}


def test_ties_name_the_lowest_rank_and_ranks_without_a_figure_are_left_out():
    assert summary([math.nan, 3.0, 3.0, 1.0])[straggler.SLOWEST_RANK] == 1.0
    assert summary([math.nan, 2.0, math.nan, 6.0]) == {
        straggler.BUSY_MIN: 2.0, straggler.BUSY_MEDIAN: 4.0, straggler.BUSY_MAX: 6.0, straggler.SLOWEST_RANK: 3.0,
        straggler.SLOWEST_OVER_MEDIAN: 1.5}


def test_the_slowest_ranks_data_wait_where_known():
    assert summary([1.0, 4.0, 2.0], [0.5, 3.0, math.nan])[straggler.SLOWEST_DATA_WAIT] == 3.0
    assert straggler.SLOWEST_DATA_WAIT not in summary([1.0, 4.0, 2.0], [0.5, math.nan, 0.1])  # not the slowest's
    assert straggler.SLOWEST_DATA_WAIT not in summary([1.0, 4.0, 2.0])


class _Run:
    """What journal_hosts uses of a run: log_later (the functions are called here as the hub's thread would) and
    event."""

    def __init__(self) -> None:
        self.later, self.events = [], []

    def log_later(self, records) -> None:
        self.later.append(records)

    def event(self, name, **fields) -> None:
        self.events.append((name, fields))


def test_the_hosts_are_journaled_from_the_hubs_thread_once_known():
    run = _Run()
    LogStepRanks(None, {}).journal_hosts(run)  # not the writing rank, or journaled already: nothing queued
    known = iter([(), ("node-a", "node-b")])
    LogStepRanks(None, {}, lambda: next(known)).journal_hosts(run)  # not known yet (the gather timed out)
    LogStepRanks(None, {}, lambda: next(known)).journal_hosts(run)
    assert run.events == []  # the training thread only queued
    assert [records() for records in run.later] == [(), ()]  # no metrics records
    assert run.events == [("rank_hosts", {"hosts": ["node-a", "node-b"]})]


def test_no_figures_under_two_ranks_and_no_ratio_over_a_zero_median():
    assert summary([math.nan, math.nan]) == {} and summary([5.0]) == {}
    assert straggler.SLOWEST_OVER_MEDIAN not in summary([0.0, 0.0, 1.0])


def test_the_console_line_from_one_point_one_times_the_median():
    hosts = ["node-0", "node-1", "node-2"]
    assert slowest_line(summary([1.0, 1.0, 1.34]), hosts) == "[primus] slowest rank 2 (node-2): 1.34x the median"
    assert slowest_line(summary([1.0, 1.0, 1.1]), hosts) is not None
    assert slowest_line(summary([1.0, 1.0, 1.09]), hosts) is None
    assert slowest_line({}, hosts) is None


class Event:
    """A CUDA event's interface over a given time (seconds): no GPU on the CI hosts; the arithmetic is ours."""

    def __init__(self, at: float):
        self.at, self.synchronised = at, False

    def elapsed_time(self, end: Event) -> float:
        return (end.at - self.at) * 1000.0  # milliseconds, as torch.cuda.Event's

    def synchronize(self) -> None:
        self.synchronised = True


def test_on_a_device_busy_time_is_the_span_less_the_streams_waits_read_at_the_log_step():
    from primus.tracking.measure.stragglers import _device_busy

    end = Event(10.0)
    waits = [(Event(2.0), Event(3.5)), (Event(6.0), Event(6.5))]  # the stream stood 1.5 s and 0.5 s
    assert _device_busy(Event(0.0), end, waits) == pytest.approx(8.0) and end.synchronised


def test_on_a_device_each_wait_of_the_training_thread_is_bracketed_by_two_events():
    import threading

    from primus.tracking.measure.stragglers import _Waits

    clock = iter(range(100))
    waits = _Waits(threading.get_ident(), lambda: Event(float(next(clock))))
    assert waits(lambda: "done", None, (), {}) == "done"
    other = threading.Thread(target=waits, args=(lambda: None, None, (), {}))
    other.start()
    other.join()  # another thread's wait (the hub's, a data loader's) is not the training thread's
    assert [(a.at, b.at) for a, b in waits.pairs] == [(0.0, 1.0)] and waits.seconds == 0.0


SLEEP_S = 0.3


COLLECTIVES = ("all_gather", "all_gather_object", "all_reduce", "broadcast", "barrier", "gather", "reduce_scatter")


def _rank(rank: int, port: int, out) -> None:
    import contextlib
    import io

    import torch
    import torch.distributed as dist

    from primus.tracking.measure.across_ranks import RankFigures

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    figures = RankFigures(figures=True, stragglers=True, writes=rank == 0)
    ours = []
    for name in COLLECTIVES:  # what RankFigures calls of torch.distributed's collectives (the steps' are the test's)
        real = getattr(dist, name)
        setattr(dist, name, lambda *a, _real=real, _name=name, **k: ours.append(_name) or _real(*a, **k))
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        first = figures.read()  # starts the clock
        for _ in range(2):  # "steps": rank 1 computes (sleeps) before the step's collective, rank 0 waits there
            if rank == 1:
                time.sleep(SLEEP_S)
            torch.distributed.distributed_c10d.all_reduce(torch.ones(4))
        second = figures.read(data_wait_s=0.1 + rank)  # its seconds waiting for batches, as upstream timed them
        third = figures.read()
        # read in order, as the hub's thread reads them: the writing rank waits (bounded) for each previous step's
        hosts = [ranks.hosts() if ranks.hosts is not None else None for ranks in (first, second)]
        first, second = dict(first.stragglers), dict(second.stragglers)
        hosts.append(third.hosts() if third.hosts is not None else None)
        third = (third.system and dict(third.system), dict(third.stragglers))
    figures.close()
    out.put((rank, first, second, third, ours, console.getvalue(), hosts))
    torch.distributed.distributed_c10d.barrier()
    dist.destroy_process_group()


def test_a_rank_slowed_before_a_collective_is_named_and_its_waiting_peer_is_not():
    """Two gloo processes with the across-rank figures and the stragglers on: the busy clock, no collective of
    ours, the writing rank (0) gets the second log step's summaries at the third and names rank 1 on the console."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = {r[0]: r[1:] for r in (queue.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(30)
    for first, second, _, ours, _, _ in results.values():
        assert ours == []  # no collective of ours
        assert first == {} and second == {}  # the first log step only starts the clock
    _, _, (system, stragglers), _, console, hosts = results[0]
    assert {"mem/host_rss_gib", "mem/host_rss_gib/min", "mem/host_rss_gib/max"} <= set(system)
    assert stragglers[straggler.SLOWEST_RANK] == 1.0 and stragglers[straggler.MISSING_RANKS] == 0.0
    # rank 1 slept 2 x 0.3 s; rank 0 spent the same time waiting in the all_reduce, which is not busy time
    assert stragglers[straggler.BUSY_MAX] >= 2 * SLEEP_S
    assert stragglers[straggler.BUSY_MIN] < SLEEP_S
    assert stragglers[straggler.SLOWEST_DATA_WAIT] == 1.1  # the slowest rank's own, through its row
    assert console.startswith("[primus] slowest rank 1 ("), console
    # every rank's host, from the first gathered step's rows: once, for the journal (none at the first log step; the
    # third was handed over before the second's were read, and gives none)
    assert hosts == [None, (socket.gethostname(),) * 2, ()], hosts
    assert results[1][2][1] == {} and results[1][4] == "" and results[1][5] == [None] * 3  # rank 1 does not write


@pytest.fixture(autouse=True)
def _no_leftover_clock():
    yield
    from primus.tracking.measure import stragglers

    stragglers._ACTIVE.clear()


def _silent_rank(rank: int, port: int, out) -> None:
    """Rank 0 writes; rank 1 takes part in training (the test's barrier) but never publishes its figures."""
    import torch.distributed as dist

    from primus.tracking.measure.across_ranks import RankFigures
    from primus.tracking.measure.rank_channel import BOUND_S

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    if rank == 0:
        figures = RankFigures(figures=False, stragglers=True, writes=True)
        reads, resolved = [], []
        for _ in range(3):
            started = time.monotonic()
            ranks = figures.read()
            reads.append(time.monotonic() - started)
            started = time.monotonic()
            got = dict(ranks.stragglers)  # as the hub's thread reads them
            resolved.append(time.monotonic() - started)
        figures.close()
        out.put((reads, resolved, got, BOUND_S))
    dist.barrier()
    dist.destroy_process_group()


def test_a_rank_that_never_publishes_is_named_missing_and_the_writer_is_not_held():
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=_silent_rank, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    reads, resolved, got, bound_s = queue.get(timeout=120)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0  # the run finishes
    assert got == {straggler.MISSING_RANKS: 1.0}
    assert max(reads) < bound_s  # the training thread queues its row and goes on: it never waits for the others
    assert max(resolved) <= bound_s + 1.5  # the hub's thread waits for a step's gather at most the bound (and a poll)
