"""The one interface every tracker sink implements. A sink runs on its own worker thread (``delivery/worker.py``),
so it may block and may raise: the worker retries, counts and warns. Every sink class, built-in or added by another
distribution (entry-point group ``primus.sinks``, ``plugins.py``), is built with one argument, a ``SinkContext``
(``trackers/context.py``); ``trackers/registry.py`` finds the class by name and builds it. Here, below the settings,
so that they can check a plugin sink's class without importing the trackers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import ClassVar

from primus.tracking.journal.records import Record


class SinkUnavailable(RuntimeError):
    """Raised by ``open`` when retrying cannot help (a package is missing, a mode is refused): the
    worker warns once and stops that sink; the journal still holds everything."""


class Durability(Enum):
    """When a record a sink was given is safe: its journal cursor is saved then."""

    ON_WRITE = "write"  # once ``write`` returned
    ON_FLUSH = "flush"  # once ``flush`` returned
    ON_CLOSE = "close"  # only once ``close`` returned: a process killed before resends all to the same tracker run


class Sink(ABC):
    """A subclass's constructor takes one ``SinkContext`` (``Sink`` itself takes nothing)."""

    name: ClassVar[str]  # a built-in sink's ``SinkName``; a plugin's entry-point name
    durability: ClassVar[Durability] = Durability.ON_WRITE
    # > 0: deliver at most this often (fewer, larger batches). For clients whose every request costs
    # milliseconds of Python on the training process's GIL, whatever its size (MLflow)
    min_interval_s: ClassVar[float] = 0.0
    # `primus tracking sync` delivers what the run could not; False for a sink of the latest figures only
    synced: ClassVar[bool] = True

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

    def flush(self) -> None:  # noqa: B027 - most sinks hold nothing back
        pass

    def close(self, status: str, complete: bool) -> None:  # noqa: B027 - most sinks have no run to end
        """End the tracker run with ``status``; ``complete`` is False when records were left undelivered."""
