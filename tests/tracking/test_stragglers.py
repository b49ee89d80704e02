"""The straggler figures (primus.tracking.measure.stragglers): the summary over ranks, the console line, and the busy clock
on two real gloo processes, one of them slowed by a sleep before a collective."""

from __future__ import annotations

import math
import socket
import time

import pytest
from support.mlflow_server import free_port

from primus.tracking.measure.stragglers import (
    BUSY_MAX,
    BUSY_MEDIAN,
    BUSY_MIN,
    SLOWEST_DATA_WAIT,
    SLOWEST_OVER_MEDIAN,
    SLOWEST_RANK,
    slowest_line,
    summary,
)


def test_summary_names_the_rank_with_the_most_busy_time():
    assert summary([1.0, 4.0, 2.0, 2.0]) == {BUSY_MIN: 1.0, BUSY_MEDIAN: 2.0, BUSY_MAX: 4.0, SLOWEST_RANK: 1.0,
                                             SLOWEST_OVER_MEDIAN: 2.0}


def test_ties_name_the_lowest_rank_and_ranks_without_a_figure_are_left_out():
    assert summary([math.nan, 3.0, 3.0, 1.0])[SLOWEST_RANK] == 1.0
    assert summary([math.nan, 2.0, math.nan, 6.0]) == {BUSY_MIN: 2.0, BUSY_MEDIAN: 4.0, BUSY_MAX: 6.0,
                                                       SLOWEST_RANK: 3.0, SLOWEST_OVER_MEDIAN: 1.5}


def test_the_slowest_ranks_data_wait_where_known():
    assert summary([1.0, 4.0, 2.0], [0.5, 3.0, math.nan])[SLOWEST_DATA_WAIT] == 3.0
    assert SLOWEST_DATA_WAIT not in summary([1.0, 4.0, 2.0], [0.5, math.nan, 0.1])  # not the slowest rank's
    assert SLOWEST_DATA_WAIT not in summary([1.0, 4.0, 2.0])


def test_no_figures_under_two_ranks_and_no_ratio_over_a_zero_median():
    assert summary([math.nan, math.nan]) == {} and summary([5.0]) == {}
    assert SLOWEST_OVER_MEDIAN not in summary([0.0, 0.0, 1.0])


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


def _rank(rank: int, port: int, out) -> None:
    import torch
    import torch.distributed as dist

    from primus.tracking.measure.across_ranks import RankFigures

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    figures = RankFigures(figures=True, stragglers=True)
    gathers = []
    real_all_gather = dist.all_gather
    dist.all_gather = lambda *a, **k: gathers.append(1) or real_all_gather(*a, **k)
    first = figures.read()  # starts the clock, gathers the host names
    for _ in range(2):  # "steps": rank 1 computes (sleeps) before the step's collective, rank 0 waits there
        if rank == 1:
            time.sleep(SLEEP_S)
        dist.all_reduce(torch.ones(4))
    before = len(gathers)
    second = figures.read(data_wait_s=0.1 + rank)  # its seconds waiting for batches, as upstream timed them
    out.put((rank, first, second, len(gathers) - before))
    dist.destroy_process_group()


def test_a_rank_slowed_before_a_collective_is_named_and_its_waiting_peer_is_not():
    """Two gloo processes with the across-rank figures and the stragglers on: the busy clock, the one gather."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = {rank: (first, second, gathers) for rank, first, second, gathers in (queue.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(30)
    for first, second, gathers in results.values():
        assert gathers == 1  # memory/utilisation and busy time in one all_gather per log step
        assert {"mem/host_rss_gib", "mem/host_rss_gib/min", "mem/host_rss_gib/max"} <= set(second.system)
        assert first.stragglers == {} and first.slowest is None  # the first log step only starts the clock
        assert second.stragglers[SLOWEST_RANK] == 1.0
        # rank 1 slept 2 x 0.3 s; rank 0 spent the same time waiting in the all_reduce, which is not busy time
        assert second.stragglers[BUSY_MAX] >= 2 * SLEEP_S
        assert second.stragglers[BUSY_MIN] < SLEEP_S
        assert second.slowest is not None and second.slowest.startswith("[primus] slowest rank 1 (")
        assert second.stragglers[SLOWEST_DATA_WAIT] == 1.1  # the slowest rank's own
        assert first.hosts == (socket.gethostname(),) * 2 and second.hosts == ()  # gathered once, for the journal
    assert results[0][1].stragglers == results[1][1].stragglers  # every rank gets the same summary


@pytest.fixture(autouse=True)
def _no_leftover_clock():
    yield
    from primus.tracking.measure import stragglers

    stragglers._ACTIVE.clear()
