"""What a feature of a run is to the run and to its delivery process: a journal follower. They are given a list of
them (built in one place, ``tracking/features.py``) and name none, so a new feature touches neither; a feature
journals what it has to say through the run (``RunJournal``), never by importing the transport.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from primus.tracking.journal.records import Alert


class Follower:
    """Each step does nothing unless a feature needs it to."""

    def start(self) -> Iterable[threading.Thread]:
        """The threads it started (what they print is this run's)."""
        return ()

    def notify(self, end: int) -> None:
        """The journal now ends at ``end`` (the hub appended): the one signal that it grew."""

    def ending(self, drained: bool) -> None:
        """The run ends, before its end record; ``drained``: every record logged so far is journaled."""

    def close(self, deadline: float, died: bool = False) -> None:
        """After the end record; ``died``: the training process ended without ending the run."""


class RunJournal(Protocol):
    """What a feature may journal through the run (``run.Run``)."""

    @property
    def last_step(self) -> int: ...  # the latest step logged for every tracker
    def alert(self, alert: Alert, notified: bool = False) -> None: ...
    def event(self, name: str, **fields: Any) -> None: ...
    def log_text(self, tag: str, text: str, step: int = 0, only: Sequence[str] | None = None) -> None: ...
