"""The threads a piece of code starts, seen from the outside (``threading.enumerate``), in this process: a check
in a subprocess would import the installed code, which mutation testing does not change."""

from __future__ import annotations

import threading
from collections.abc import Callable


def threads_started_by(start: Callable[[], object]) -> list[tuple[str, bool]]:
    """``(name, daemon)`` of each thread running after ``start()`` that was not before it. A daemon thread does
    not hold the process at exit (the exit handlers end a run, not its threads)."""
    before = set(threading.enumerate())
    start()
    return sorted((t.name, t.daemon) for t in set(threading.enumerate()) - before)
