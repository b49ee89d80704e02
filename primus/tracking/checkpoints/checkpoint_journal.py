"""What a backend's checkpoint hooks call to journal a save's start mark, the save, a resume and an evaluation's pause
(``CheckpointJournal``), as the events of ``journal/records.py`` that every sink, ``primus tracking sync``, the stall
detector and ``primus report`` read. Until a run is attached (MaxText loads its checkpoint before the run starts) the
records wait here, with their own time. docs/tracking-internals.md#checkpoint-events gives each event's fields.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from primus.redaction import redact_text
from primus.tracking.journal.records import BUSY_EVENT, LOADED, SAVE_START, SAVED, CheckpointLoaded, CheckpointSaved

WAITING_RECORDS = 64  # records kept for a run not started yet (a process that never tracks keeps only these)
SIZE_MAX_FILES = 1000  # past this many files the size is not "cheap" (stat calls on a parallel file system)


class EventLog(Protocol):
    def event(self, name: str, **fields: Any) -> None: ...


class CheckpointJournal:
    """What a backend's checkpoint hooks (and its evaluation's, the other expected pause) call, on a process that
    tracks."""

    def __init__(self, run: EventLog | None = None):
        self._run = run
        self._waiting: deque[tuple[str, dict[str, Any]]] = deque(maxlen=WAITING_RECORDS)
        self._started: dict[int, float] = {}  # iteration -> monotonic time of its start mark
        self._load_started: float | None = None  # monotonic time of the latest load's start mark

    def attach(self, run: EventLog) -> None:
        self._run = run
        while self._waiting:
            name, fields = self._waiting.popleft()
            run.event(name, **fields)

    def save_started(self, iteration: int) -> None:
        self._started[iteration] = time.monotonic()
        self._event(SAVE_START, iteration=iteration)

    def save_ended(self, save: CheckpointSaved) -> None:
        """Journal ``save`` with the seconds since its start mark and its size (when cheap to know)."""
        start = self._started.pop(save.iteration, None)
        seconds = None if start is None else round(time.monotonic() - start, 3)
        size = None if "://" in save.path else size_of(Path(save.path))
        self._event(SAVED, **asdict(save) | {"path": redact_text(save.path), "seconds": seconds, "bytes": size})

    def load_started(self) -> None:
        """A load begins: its record says how long it took. No record of its own (a load that finds no
        checkpoint is not one)."""
        self._load_started = time.monotonic()

    def loaded(self, load: CheckpointLoaded) -> None:
        """Journal ``load`` with the seconds since the load's start mark, if one."""
        start, self._load_started = self._load_started, None
        seconds = None if start is None else round(time.monotonic() - start, 3)
        self._event(LOADED, **asdict(load) | {"path": redact_text(load.path), "seconds": seconds})

    def evaluating(self, on: bool, after_step: int | None = None) -> None:
        """An evaluation starts (``on``) or ends: no new step is logged meanwhile, which is not a stall.
        ``after_step``: the training step before it, when that step's log comes during the evaluation."""
        extra = {} if after_step is None else {"after_step": after_step}
        self._event(BUSY_EVENT, what="evaluation", on=on, **extra)

    def _event(self, name: str, **fields: Any) -> None:
        if self._run is not None:
            self._run.event(name, **fields)
        else:
            self._waiting.append((name, fields | {"at_ms": int(time.time() * 1000)}))


def in_folder_of_checkpoints(path: str, iteration: int) -> CheckpointSaved:
    """A checkpoint that is a folder named for its step inside a folder of checkpoints (TorchTitan's ``step-N``,
    MaxText's ``N``): its W&B artifact is named after the outer folder and aliased by its own name."""
    folder = PurePosixPath(path.rstrip("/"))
    return CheckpointSaved(iteration=iteration, path=path, artifact=folder.parent.name, alias=folder.name)


def size_of(path: Path, max_files: int = SIZE_MAX_FILES) -> int | None:
    """Bytes of the files under ``path`` (or of the file), None past ``max_files`` files or when unreadable."""
    if path.is_file():
        return path.stat().st_size
    total, count = 0, 0
    try:
        for root, _, names in os.walk(path):
            count += len(names)
            if count > max_files:
                return None
            total += sum(os.stat(os.path.join(root, n)).st_size for n in names)
    except OSError:
        return None
    return total if count else None
