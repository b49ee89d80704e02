"""The writing rank's figures over ranks of a log step, handed over at the next log step as mappings that fill in
when first read — on the hub's thread, which may wait for them (bounded), never on the training thread. A log step's
rows are gathered while training goes on (rank_channel.py), normally long before the next log step; waiting for
them there, rather than taking whatever is ready, puts each log step's figures at the next log step every time, on
a loaded host too."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

Figures = tuple[dict[str, float], dict[str, float]]  # (memory/utilisation over ranks, straggler/*)
NONE: Figures = ({}, {})


class GatheredSteps:
    """Each gathered log step's figures by step (the channel's thread puts, the hub's thread takes)."""

    def __init__(self, wait_s: float) -> None:
        self._wait_s = wait_s  # the most one take waits
        self._steps: dict[int, Figures] = {}
        self._cond = threading.Condition()
        self._behind = False  # the last take timed out: the next does not wait, until a step is in on time
        self._taken = -1  # the newest step taken: an older one's figures were dropped, never waited for

    def put(self, step: int, figures: Figures) -> None:
        with self._cond:
            self._steps[step] = figures
            self._cond.notify_all()

    def take(self, step: int) -> Figures:
        """``step``'s figures, waiting for them at most ``wait_s`` (none when the previous take timed out); older
        steps' are dropped."""
        with self._cond:
            if step <= self._taken:
                return NONE
            self._taken = step
            timeout = 0.0 if self._behind else self._wait_s
            self._behind = not self._cond.wait_for(lambda: step in self._steps, timeout)
            figures = self._steps.pop(step, NONE)
            for old in [s for s in self._steps if s < step]:
                del self._steps[old]
            return figures


class Gathered(Mapping[str, float]):
    """Figures that are made when first read (``make``: may wait): on the hub's thread, never the training
    thread."""

    def __init__(self, make: Callable[[], Mapping[str, float]]) -> None:
        self._make = make
        self._figures: Mapping[str, float] | None = None

    def _made(self) -> Mapping[str, float]:
        if self._figures is None:
            self._figures = self._make()
        return self._figures

    def __getitem__(self, name: str) -> float:
        return self._made()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


class Previous:
    """One log step's take of the previous log step's figures, shared by its two mappings."""

    def __init__(self, steps: GatheredSteps, step: int) -> None:
        self._steps, self._step = steps, step
        self._figures: Figures | None = None
        self._lock = threading.Lock()

    def figures(self) -> Figures:
        with self._lock:
            if self._figures is None:
                self._figures = self._steps.take(self._step)
            return self._figures
