"""The benchmarks' CPU counters: how much thread CPU our code takes from the threads that call it.

Nothing here runs in production: ``sitecustomize.py`` (this folder, on PYTHONPATH of a measured run) calls
``cpu_accounted.install``, which wraps Primus's entry points from outside with these counters once Primus is
imported. Each counted call takes the thread CPU time (``time.thread_time_ns``) it spends, less the time spent
back in upstream's code it calls (``theirs``). The instrument itself is charged to no one: each interval charged
less what it charges an empty one (its clock read and its own frames, measured at start), and ours called from ours
reads no clock. At exit each process that
counted writes ``cpu-<pid>.json`` to the directory ``$PRIMUS_CPU_ACCOUNTING``: per thread, the nanoseconds, and per
outermost entry point its calls, nanoseconds and each call's nanoseconds, plus what ``note`` added (the delivery
process's start-up). Importing this module starts nothing (``_measure`` reads the dumps through it).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import resource
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "PRIMUS_CPU_ACCOUNTING"
_dir: str | None = None  # set by start: where this process's dump goes


class _Thread(threading.local):
    """This thread's account: a stack of "ours"/"theirs" frames; CPU is charged while the top one is ours."""

    def __init__(self) -> None:
        self.stack: list[bool] = []
        self.since = 0
        self.ns = 0
        self.entry = ""  # the outermost entry point now running, and this thread's ns when it was entered
        self.entry_ns = 0
        self.entries: dict[str, list[int]] = {}  # entry point -> [calls, ns]
        self.each: dict[str, list[int]] = {}  # entry point -> ns of each call (a step hook's one-offs show apart)
        # this thread's own attributes: read from another thread (the dump at exit), ``self`` shows that one's
        _THREADS.append((threading.current_thread().name, vars(self)))


_THREADS: list[tuple[str, dict[str, Any]]] = []
_LOCAL: _Thread  # set by start
_INTERVAL_COST_NS = 0
_extra: dict[str, Any] = {}
_NEW = object.__new__


def start(directory: str) -> None:
    """Count in this process from now on; its figures go to ``directory`` when it exits."""
    global _dir, _LOCAL, _INTERVAL_COST_NS
    _INTERVAL_COST_NS = _interval_cost_ns()
    _LOCAL = _Thread()  # threading.local: __init__ runs again in each thread that uses it
    _dir = directory
    atexit.register(dump)


def _interval_cost_ns(calls: int = 1001) -> int:
    """What the instrument itself adds to each interval it charges: an interval runs from the clock read that ends
    one push or pop to the one that starts the next, so it holds one read's worth of the clock (~3 us on a VM, where
    each is a system call) and the instrument's own frames around our code (~0.5 us). Measured as what it charges
    for an empty one, an entry point of ours that runs no Python (a C function) called from upstream's code, the
    median of ``calls`` on a probe account of its own; warm here, it is less than the instrument takes in a
    training step's cold caches, so our figures stay on the high side. Uncorrected, this was ~40 us per logged step
    (the clock) and ~0.5 us per call of ours from upstream (the frames) charged to us for the measuring alone."""
    global _LOCAL, _INTERVAL_COST_NS
    _INTERVAL_COST_NS = 0
    _LOCAL = probe = _Thread()
    _THREADS.pop()  # the probe's figures are no thread's
    empty = ours(int, "probe")
    charged = []
    _push(False, "probe", time.thread_time_ns())  # upstream's code, calling ours
    for _ in range(calls):
        before = probe.ns
        empty()
        charged.append(probe.ns - before)
    _pop()
    return int(statistics.median(charged))


def _charge(account: _Thread, now: int) -> None:
    account.ns += max(0, now - account.since - _INTERVAL_COST_NS)


def _push(mine: bool, entry: str, now: int) -> None:
    """``now``: the clock read by the caller first thing (the frame of this call is not charged to the code left)."""
    account = _LOCAL
    if account.stack:
        if account.stack[-1]:
            _charge(account, now)
    else:
        account.entry, account.entry_ns = entry, account.ns
    account.stack.append(mine)
    account.since = time.thread_time_ns()  # the bookkeeping is charged to no one


def _pop() -> None:
    now = time.thread_time_ns()
    account = _LOCAL
    if account.stack.pop():
        _charge(account, now)
    if not account.stack:
        calls_ns = account.entries.setdefault(account.entry, [0, 0])
        calls_ns[0] += 1
        calls_ns[1] += account.ns - account.entry_ns
        account.each.setdefault(account.entry, []).append(account.ns - account.entry_ns)
    account.since = time.thread_time_ns()


def ours(fn: Callable, entry: str) -> Callable:
    """``fn`` with its thread CPU counted as ours, as ``entry`` (nested calls of ours are counted once). A plain
    closure, not a wrapt wrapper: a method's wrapt binding would add its cost to each call from our own code."""

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        stack = _LOCAL.stack
        if stack and stack[-1]:  # called from our own code: already counted, no clock to read
            return fn(*args, **kwargs)
        _push(True, entry, time.thread_time_ns())
        try:
            return fn(*args, **kwargs)
        finally:
            _pop()

    return counted


class _Theirs:
    """Upstream's function called from our code (its thread CPU is not ours); a slotted object, not a closure:
    a patch wrapper makes one per call, which would charge ~4 us to us each time. Made with
    ``object.__new__``, no ``__init__``: its frame, cold after a training step, was charged to our code."""

    __slots__ = ("__wrapped__",)

    def __call__(self, *args, **kwargs):
        _push(False, "upstream", time.thread_time_ns())
        try:
            return self.__wrapped__(*args, **kwargs)
        finally:
            _pop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__wrapped__, name)


def theirs(wrapped, instance, args, kwargs):
    """A wrapt wrapper for upstream's function that our code calls: its thread CPU is not ours. Called by
    upstream itself (nothing of ours running), it is upstream's already and passes straight through."""
    stack = _LOCAL.stack
    if stack and stack[-1]:
        call = _NEW(_Theirs)
        call.__wrapped__ = wrapped
        return call(*args, **kwargs)
    return wrapped(*args, **kwargs)


def wrapper(patch_wrapper: Callable, entry: str) -> Callable:
    """A wrapt wrapper ``(wrapped, instance, args, kwargs)`` counted as ours (as ``entry``), its call of
    ``wrapped`` as theirs."""

    def counted(wrapped, instance, args, kwargs):
        call = _NEW(_Theirs)  # the instrument's own, made before the clock starts for us
        call.__wrapped__ = wrapped
        _push(True, entry, time.thread_time_ns())
        try:
            return patch_wrapper(call, instance, args, kwargs)
        finally:
            _pop()

    return counted


def note(**figures: Any) -> None:
    """Figures this process adds to its dump (the delivery process's start-up)."""
    _extra.update(figures)


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    """This program's peak RSS. Not ru_maxrss: a child keeps there the peak of the parent it was forked from."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def dump() -> None:
    """Write this process's figures (again, if it already did: the latest stand)."""
    if _dir is None:
        return
    threads: dict[str, dict[str, Any]] = {}
    for name, account in list(_THREADS):
        total = threads.setdefault(name, {"ns": 0, "entries": {}, "each": {}})
        total["ns"] += account["ns"]
        for entry, (calls, ns) in account["entries"].items():
            calls_ns = total["entries"].setdefault(entry, [0, 0])
            calls_ns[0] += calls
            calls_ns[1] += ns
        for entry, each in account["each"].items():
            total["each"].setdefault(entry, []).extend(each)
    body = {
        "pid": os.getpid(),
        "threads": threads,
        "process_cpu_s": process_cpu_s(),
        "peak_rss_mib": peak_rss_mib(),
        "interval_cost_ns": _INTERVAL_COST_NS,
        **_extra,
    }
    path = Path(_dir) / f"cpu-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body))


def read(directory: Path) -> list[dict[str, Any]]:
    """Every process's dump in ``directory``."""
    return [json.loads(p.read_text()) for p in sorted(Path(directory).glob("cpu-*.json"))]
