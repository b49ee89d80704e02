"""Which rank is slow (``primus_stragglers``): each rank's busy time since the last log step, gathered over ranks
at every log step with the across-rank figures (``across_ranks.RankFigures``: one all_gather), summarised on the
rank that logs. Busy time is the wall time since the previous log step minus the time the training thread was
blocked in a collective's ``Work.wait`` (on a GPU: CUDA events around the waits). A rank slowed by anything arrives
late at the next collective and waits least. docs/tracking-internals.md#stragglers says why this measure, and what
it does not count.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

BUSY_MIN = "straggler/busy_s_min"
BUSY_MEDIAN = "straggler/busy_s_median"
BUSY_MAX = "straggler/busy_s_max"
SLOWEST_RANK = "straggler/slowest_rank"
SLOWEST_OVER_MEDIAN = "straggler/slowest_over_median"
SLOWEST_DATA_WAIT = "straggler/slowest_data_wait_s"
SLOW_RATIO = 1.1  # the slowest rank is named on the console from this many times the median


def summary(busy: Sequence[float], data_wait: Sequence[float] = ()) -> dict[str, float]:
    """``straggler/*`` from every rank's busy seconds (index: rank; NaN: no figure yet); empty under two figures.
    Ties: the lowest rank is the slowest; a zero median leaves the ratio out. ``data_wait``: each rank's seconds of
    its busy time spent waiting for batches, where upstream times them (NaN: not known): the slowest rank's too."""
    ranked = [(seconds, rank) for rank, seconds in enumerate(busy) if not math.isnan(seconds)]
    if len(ranked) < 2:
        return {}
    median = statistics.median(seconds for seconds, _ in ranked)
    top, slowest = max(ranked, key=lambda pair: (pair[0], -pair[1]))
    out = {
        BUSY_MIN: min(seconds for seconds, _ in ranked),
        BUSY_MEDIAN: median,
        BUSY_MAX: top,
        SLOWEST_RANK: float(slowest),
    }
    if median > 0:
        out[SLOWEST_OVER_MEDIAN] = top / median
    if slowest < len(data_wait) and not math.isnan(data_wait[slowest]):
        out[SLOWEST_DATA_WAIT] = data_wait[slowest]
    return out


def slowest_line(figures: dict[str, float], hosts: Sequence[str]) -> str | None:
    """The console line naming the slowest rank and its host, when it is at least SLOW_RATIO times the median."""
    ratio = figures.get(SLOWEST_OVER_MEDIAN)
    if ratio is None or ratio < SLOW_RATIO:
        return None
    rank = int(figures[SLOWEST_RANK])
    host = hosts[rank] if rank < len(hosts) else "?"
    return f"[primus] slowest rank {rank} ({host}): {ratio:.2f}x the median"


class _Waits:
    """The time one thread spent in ``Work.wait`` since it was last taken: host seconds, or on a GPU the CUDA event
    pairs around each wait (read at the log step)."""

    def __init__(self, thread: int, event: Callable[[], Any] | None) -> None:
        self.thread = thread
        self.event = event  # makes a recorded CUDA event; None: the host's clock
        self.seconds = 0.0
        self.pairs: list[tuple[Any, Any]] = []

    def __call__(self, wrapped, instance, args, kwargs):
        if threading.get_ident() != self.thread:
            return wrapped(*args, **kwargs)
        if self.event is not None:
            before = self.event()
            try:
                return wrapped(*args, **kwargs)
            finally:
                self.pairs.append((before, self.event()))
        started = time.perf_counter()
        try:
            return wrapped(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


_ACTIVE: list[_Waits] = []  # the process's one wrapper's counter: one BusyClock per process at a time


def _wait_wrapper(wrapped, instance, args, kwargs):
    return _ACTIVE[0](wrapped, instance, args, kwargs) if _ACTIVE else wrapped(*args, **kwargs)


def _install() -> None:
    """Wrap ``Work.wait`` once per process (a second clock reuses the wrapper)."""
    import torch
    import wrapt

    work = torch._C._distributed_c10d.Work
    if not isinstance(work.__dict__.get("wait"), wrapt.FunctionWrapper):
        wrapt.wrap_function_wrapper(work, "wait", _wait_wrapper)


class BusyClock:
    """This rank's busy seconds between log steps, taken on the training thread (the one that makes it)."""

    def __init__(self, device: bool = False) -> None:
        _install()
        event = _cuda_event if device else None
        self._waits = _Waits(threading.get_ident(), event)
        _ACTIVE[:] = [self._waits]
        self._since: Any = None  # the previous log step: perf_counter seconds, or its CUDA event

    def take(self) -> float:
        """At a log step: busy seconds since the previous one (NaN at the first, which only starts the clock)."""
        waits = self._waits
        if waits.event is None:
            now: Any = time.perf_counter()
            busy = math.nan if self._since is None else now - self._since - waits.seconds
        else:
            now = waits.event()
            busy = math.nan if self._since is None else _device_busy(self._since, now, waits.pairs)
        waits.seconds, waits.pairs = 0.0, []
        self._since = now
        return busy

    def close(self) -> None:
        if _ACTIVE and _ACTIVE[0] is self._waits:
            _ACTIVE.clear()


def _cuda_event():
    import torch

    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def _device_busy(since, now, pairs: list[tuple[Any, Any]]) -> float:
    now.synchronize()  # at the log step only: every earlier event has completed then
    stood = sum(before.elapsed_time(after) for before, after in pairs)
    return (since.elapsed_time(now) - stood) / 1000.0  # elapsed_time: milliseconds
