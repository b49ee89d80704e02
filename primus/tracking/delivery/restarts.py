"""How often a delivery process that died is started again: at most ``LIMIT`` times within any ``WINDOW_S``, so a
process killed now and then (the OOM killer, a node agent) comes back every time, and one that dies as it starts
(a broken tracker client, no memory at all) is not started in a loop: past the bound the run says so and leaves
what was not delivered to ``primus tracking sync``."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

LIMIT = 5
WINDOW_S = 600.0


class RestartBudget:
    def __init__(self, limit: int = LIMIT, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window_s = window_s
        self.used = 0  # restarts taken in the whole run (its final report)
        self._clock = clock
        self._recent: deque[float] = deque()

    def take(self) -> bool:
        """True, and counted, when one more restart fits in the window ending now."""
        now = self._clock()
        while self._recent and now - self._recent[0] >= self.window_s:
            self._recent.popleft()
        if len(self._recent) >= self.limit:
            return False
        self._recent.append(now)
        self.used += 1
        return True
