"""The run's journal: one JSON line per record in ``<run_dir>/journal.jsonl``, the durable record.

The hub appends to it before any sink sees a record; every sink reads it forward from its own
cursor, so a sink that fell behind (a dead server, a crash, a restart) catches up from the file,
and ``primus tracking sync`` can replay it later. A line is
``{"k": kind, "s": step, "t": unix_ms, "d": data}`` with kind ``m`` (metrics: ``{name: float}``),
``x`` (text: ``{"tag", "text"}``) or ``e`` (a lifecycle event), and ``"o": [sink, ...]`` when the
record is meant for some sinks only. The timestamp is taken on the
training thread and never re-stamped, which is what makes a resend to MLflow idempotent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOURNAL_FILE = "journal.jsonl"
METRICS, TEXT, EVENT = "m", "x", "e"


@dataclass(frozen=True, slots=True)
class Record:
    kind: str
    step: int
    ts_ms: int
    data: Mapping[str, Any]
    end: int  # journal offset just past this record: a sink that handled it resumes from here
    only: tuple[str, ...] | None = None  # the sinks this record is for (by Sink.name); None: all

    def is_for(self, sink: str) -> bool:
        return self.only is None or sink in self.only


def encode(kind: str, step: int, ts_ms: int, data: Mapping[str, Any], only: tuple[str, ...] | None = None) -> bytes:
    obj = {"k": kind, "s": step, "t": ts_ms, "d": data}
    if only is not None:
        obj["o"] = only
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class JournalWriter:
    """Appends whole lines with one ``os.write`` each batch (O_APPEND), so a reader never sees half a
    line except at the tail while a write is in flight. Past ``max_bytes`` only events are written."""

    def __init__(self, path: Path, max_bytes: int):
        self.path = path
        self.max_bytes = max_bytes
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.size = os.fstat(self._fd).st_size

    def has_room(self, nbytes: int) -> bool:
        return self.size + nbytes <= self.max_bytes

    def append(self, lines: list[bytes]) -> int:
        """Write the lines; return the offset just past the last one."""
        if lines:
            data = b"".join(lines)
            view = memoryview(data)
            while view:  # a regular-file write is normally whole; loop for the rare short write
                view = view[os.write(self._fd, view):]
            self.size += len(data)
        return self.size

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def read_records(path: Path, start: int, stop: int | None = None,
                 max_bytes: int = 4 << 20) -> tuple[list[Record], int]:
    """Complete records from byte ``start`` up to ``stop`` (default: the end of the file), reading
    about ``max_bytes``; returns them and the offset just past the last complete line read."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            want = max_bytes if stop is None else min(max_bytes, stop - start)
            chunk = f.read(max(want, 0))
            while chunk and b"\n" not in chunk and len(chunk) == want:  # one line longer than max_bytes
                more = f.read(want)
                chunk += more
                if not more:
                    break
    except FileNotFoundError:
        return [], start
    records = []
    pos = start
    for line in chunk.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # a line still being written, or cut by the read size: read it next time
        pos += len(line)
        try:
            obj = json.loads(line)
            only = tuple(obj["o"]) if "o" in obj else None
            records.append(Record(obj["k"], int(obj["s"]), int(obj["t"]), obj["d"], pos, only))
        except (ValueError, KeyError, TypeError):
            continue  # a torn line left by a crash: skip it, keep the rest
    return records, pos


def tail_records(path: Path, tail_bytes: int) -> list[Record]:
    """The whole records in the journal's last ``tail_bytes``."""
    start = max(0, journal_size(path) - tail_bytes)
    records, _ = read_records(path, start, max_bytes=tail_bytes)
    return records[1:] if start else records  # the first line read may be the end of a longer one


def last_steps(path: Path, tail_bytes: int = 1 << 20) -> dict[tuple[str, ...] | None, int]:
    """The highest metrics step per destination (``only``) in the journal's last ``tail_bytes``: where
    an earlier process of this run got to (steps only grow within a process)."""
    last: dict[tuple[str, ...] | None, int] = {}
    for r in tail_records(path, tail_bytes):
        if r.kind == METRICS:
            last[r.only] = max(r.step, last.get(r.only, r.step))
    return last


def last_end_status(path: Path, tail_bytes: int = 64 << 10) -> str | None:
    """The status of the journal's last "end" record, if its last ``tail_bytes`` hold one."""
    ends = [r.data.get("status") for r in tail_records(path, tail_bytes)
            if r.kind == EVENT and r.data.get("event") == "end"]
    return ends[-1] if ends else None


def journal_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
