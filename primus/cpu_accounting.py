"""Opt-in CPU accounting for the benchmarks: how much thread CPU our code takes from the threads that call it.

``PRIMUS_CPU_ACCOUNTING=<directory>`` (read once, at import) turns it on. Then every entry point upstream calls
into (each patch's wrapper, the Megatron writer proxy, the TorchTitan logger, the run's log calls) counts the
thread CPU time (``time.thread_time_ns``) it spends, less the time spent back in upstream's code it calls
(``wrapped``). At exit each process writes ``cpu-<pid>.json`` there: per thread, the nanoseconds and the number
of outermost calls. The delivery process adds its start-up (CPU until every sink opened, peak RSS).

Off (the default), ``ours`` returns the function itself and ``enabled()`` is False: nothing is added anywhere.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ENV = "PRIMUS_CPU_ACCOUNTING"
_DIR = os.environ.get(ENV) or None
F = TypeVar("F", bound=Callable[..., Any])


def enabled() -> bool:
    return _DIR is not None


class _Thread(threading.local):
    """This thread's account: a stack of "ours"/"theirs" frames; CPU is charged while the top one is ours."""

    def __init__(self):
        self.stack: list[bool] = []
        self.since = 0
        self.ns = 0
        self.calls = 0
        _THREADS.append((threading.current_thread().name, self))


_THREADS: list[tuple[str, _Thread]] = []
_LOCAL: _Thread | None = None
_extra: dict[str, Any] = {}


def _switch(mine: bool | None) -> None:
    """Push a frame (``mine`` True: ours, False: upstream's) or pop one (None), charging the frame left."""
    now = time.thread_time_ns()
    account = _LOCAL
    if account.stack and account.stack[-1]:
        account.ns += now - account.since
    if mine is None:
        account.stack.pop()
    else:
        if not account.stack:
            account.calls += 1
        account.stack.append(mine)
    account.since = time.thread_time_ns()  # the bookkeeping above is charged to no one


def ours(fn: F) -> F:
    """Count ``fn``'s thread CPU as ours (nested calls of ours are counted once)."""
    if _DIR is None:
        return fn

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        _switch(True)
        try:
            return fn(*args, **kwargs)
        finally:
            _switch(None)

    return counted


def theirs(fn: F) -> F:
    """Upstream's ``fn`` called from our code: its thread CPU is not ours."""
    if _DIR is None:
        return fn

    @functools.wraps(fn)
    def uncounted(*args, **kwargs):
        _switch(False)
        try:
            return fn(*args, **kwargs)
        finally:
            _switch(None)

    return uncounted


def wrapper(patch_wrapper: Callable) -> Callable:
    """A wrapt wrapper ``(wrapped, instance, args, kwargs)`` counted as ours, its call of ``wrapped`` as theirs."""
    if _DIR is None:
        return patch_wrapper

    @functools.wraps(patch_wrapper)
    def counted(wrapped, instance, args, kwargs):
        _switch(True)
        try:
            return patch_wrapper(theirs(wrapped), instance, args, kwargs)
        finally:
            _switch(None)

    return counted


def note(**figures: Any) -> None:
    """Figures this process adds to its dump (the delivery process's start-up)."""
    _extra.update(figures)


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def dump() -> None:
    """Write this process's figures (also called by a process that leaves with ``os._exit``)."""
    threads: dict[str, dict[str, int]] = {}
    for name, account in list(_THREADS):
        total = threads.setdefault(name, {"ns": 0, "calls": 0})
        total["ns"] += account.ns
        total["calls"] += account.calls
    body = {"pid": os.getpid(), "threads": threads, "process_cpu_s": process_cpu_s(),
            "peak_rss_mib": peak_rss_mib(), **_extra}
    path = Path(_DIR) / f"cpu-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body))


def read(directory: Path) -> list[dict[str, Any]]:
    """Every process's dump in ``directory``."""
    return [json.loads(p.read_text()) for p in sorted(Path(directory).glob("cpu-*.json"))]


if _DIR is not None:
    _LOCAL = _Thread()  # threading.local: __init__ runs again in each thread that uses it
    atexit.register(dump)
