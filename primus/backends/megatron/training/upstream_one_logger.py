"""The object upstream's ``get_one_logger()`` returns when Megatron's legacy ``one_logger`` package is absent and
Primus's One-Logger is on: upstream's ``one_logger_utils`` hands it its end-to-end figures (train iterations and
their time, throughput, checkpoint counts and times, app-start to train-loop times) as it would the legacy object,
and they go into the journal as ``one_logger/*`` metrics: every tracker gets them, and the One-Logger sink puts
them on the application span. On the training thread it only copies the numbers into a queued record. Figures from
before the process's first log step wait for it: a resumed run's trackers take no step below the last one tracked."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from primus.tracking.trackers.one_logger import E2E_PREFIX as PREFIX


class UpstreamOneLogger:
    """The legacy object's methods that upstream calls (megatron-core 0.19: ``get_context_manager``, ``store_*``,
    ``log_metrics``, ``log_app_tag``, ``finish``); it never raises into training."""

    def __init__(self, log: Callable[[int, Mapping[str, float]], None], iteration: Callable[[], int]):
        self._log = log
        self._iteration = iteration
        self._store: dict[str, Any] = {}
        self._pending: dict[str, float] = {}

    @contextlib.contextmanager
    def get_context_manager(self) -> Iterator[None]:
        # upstream divides by the iterations trained, zero in a job resumed at its last iteration
        with contextlib.suppress(Exception):
            yield

    def store_set(self, key: str, value: Any) -> None:
        self._store[key] = value

    def store_get(self, key: str) -> Any:
        return self._store.get(key)

    def store_has_key(self, key: str) -> bool:
        return key in self._store

    def store_pop(self, key: str) -> Any:
        return self._store.pop(key, None)

    def log_metrics(self, metrics: Mapping[str, Any] | None) -> None:
        numbers = {
            PREFIX + k: float(v) for k, v in (metrics or {}).items() if isinstance(v, (int, float)) and v is not None
        }
        self._pending.update(numbers)
        if self._iteration() > 0:
            self.flush()

    def flush(self) -> None:
        """Journal what waits, at the last logged step (called as a step is logged)."""
        if self._pending:
            self._log(self._iteration(), self._pending)
            self._pending = {}

    def log_app_tag(self, tag: str) -> None:
        """The tag is in the run's One-Logger configuration already (``app_tag``)."""

    def finish(self) -> None:
        """The run's end closes the One-Logger application."""
