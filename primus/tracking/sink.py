"""The one interface every tracker sink implements. A sink runs on its own worker thread
(``worker.py``), so it may block and may raise: the worker retries, counts and warns. Another distribution
adds a sink through the entry-point group ``primus.sinks`` (``plugin_sinks.py``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from primus.tracking.journal import Record


class SinkUnavailable(RuntimeError):
    """Raised by ``open`` when retrying cannot help (a package is missing, a mode is refused): the
    worker warns once and stops that sink; the journal still holds everything."""


class Sink(ABC):
    name: ClassVar[str]
    # True: a record is safe once ``write`` returned (the cursor is saved then); False: only after ``flush``
    durable_on_write: ClassVar[bool] = True
    # False: not even ``flush`` makes it safe, only ``close`` (the cursor is saved then, so a process killed
    # before it resends everything to the same tracker run)
    durable_on_flush: ClassVar[bool] = True
    # > 0: deliver at most this often (fewer, larger batches). For clients whose every request costs
    # milliseconds of Python on the training process's GIL, whatever its size (MLflow)
    min_interval_s: ClassVar[float] = 0.0

    @abstractmethod
    def open(self) -> str:
        """Connect, create or resume the tracker run; return the target's identity (a run id, a
        directory) that the delivery cursor belongs to. Raise to be retried later."""

    def chunks(self, records: Sequence[Record]) -> Iterable[Sequence[Record]]:
        """Split records into what one ``write`` may send (e.g. MLflow's 1000 metrics per batch)."""
        yield records

    @abstractmethod
    def write(self, records: Sequence[Record]) -> None:
        """Deliver the records, all or none (raise). Records of every kind arrive; ignore what does not apply."""

    def flush(self) -> None:
        pass

    def close(self, status: str, complete: bool) -> None:
        """End the tracker run with ``status``; ``complete`` is False when records were left undelivered."""


def outside_except(fn: Callable[[], Any]) -> Exception | None:
    """Run ``fn`` and return its exception instead of raising it, so the caller logs outside the
    ``except`` block: a log handler that fails prints the exception being handled along with its own
    error, unredacted (an MLflow error carries the tracking URI, password included)."""
    try:
        fn()
    except Exception as e:
        return e
    return None
