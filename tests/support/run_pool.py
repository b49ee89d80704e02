"""Trainings started in the background, each once per session under its name, two at a time (2 cores; most of a
one-process run is imports on one of them): several modules can read one run, and a module can start every run it
reads before its first test needs the first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class RunPool:
    def __init__(self, prefix: str, workers: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix)
        self._started: dict[str, Future] = {}
        self._lock = threading.Lock()

    def start(self, name: str, launch: Callable[[], Any]) -> None:
        """``launch()`` in the background, unless a run of this name was started already."""
        with self._lock:
            if name not in self._started:
                self._started[name] = self._pool.submit(launch)

    def result(self, name: str) -> Any:
        """The run started under ``name``, once it has ended (what its ``launch`` returned or raised)."""
        with self._lock:
            started = self._started[name]
        return started.result()
