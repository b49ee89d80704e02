"""Background sampling threads (``Utilisation``'s host and device readings): daemon threads, so a process never
waits for one, yet each ends at exit before the interpreter finalizes. A daemon thread that wakes from its sleep
while CPython 3.12 tears the interpreter down can abort the process (SIGABRT or SIGSEGV in PyEval_RestoreThread,
python/cpython#127893): seen as a rank of a finished training dying of SIGABRT at its exit, which fails the job."""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

JOIN_S = 2.0  # at exit, how long a sample being taken may take to end

_ending = threading.Event()
_threads: list[threading.Thread] = []
_lock = threading.Lock()


def sample_every(interval_s: float, owner: T, sample: Callable[[T], None], name: str) -> threading.Thread:
    """Call ``sample(owner)`` every ``interval_s`` on a thread of its own, until ``owner`` is gone (the thread holds
    only a weak reference) or the process exits. A sample that raises is skipped."""
    thread = threading.Thread(target=_sample, args=(weakref.ref(owner), interval_s, sample), name=name, daemon=True)
    with _lock:
        if not _threads:
            atexit.register(end_sampling)  # runs before the interpreter finalizes, after the program's own end
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    thread.start()
    return thread


def end_sampling() -> None:
    """End every sampling thread (at exit)."""
    _ending.set()
    with _lock:
        threads = list(_threads)
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join(JOIN_S)


def _sample(owner: weakref.ref, interval_s: float, sample: Callable) -> None:
    while not _ending.wait(interval_s):
        target = owner()
        if target is None:
            return
        try:
            sample(target)
        except Exception:  # noqa: BLE001 - a failed reading keeps the previous one; logging is never broken
            pass
        del target
