"""Appends to the run's journal (see ``reader.py``): whole lines with one ``os.write`` per batch (O_APPEND),
so a reader never sees half a line except at the tail while a write is in flight; a new segment once the
current one would pass ``segment_bytes``.

A write that fails (the disk is full) leaves nothing behind: the segment is cut back to its last whole line
and the error goes to the caller, which sends the batch on by another way; the next batch tries again.
"""

from __future__ import annotations

import os
from pathlib import Path

from primus.tracking.journal.files import JOURNAL_DIR, LEGACY_JOURNAL
from primus.tracking.journal.reader import PACKED, RAW, segment_name, segments

SEGMENT_BYTES = 64 << 20


class JournalWriter:
    def __init__(self, run_dir: Path, segment_bytes: int = SEGMENT_BYTES):
        self.dir = run_dir / JOURNAL_DIR
        self.segment_bytes = segment_bytes
        self.dir.mkdir(exist_ok=True)
        _tidy(self.dir)
        _adopt_legacy(run_dir, self.dir)
        found = segments(run_dir)
        last = found[-1] if found and not found[-1].packed else None
        self._start = last.start if last else (found[-1].start + found[-1].size() if found else 0)
        self._fd = self._open(self._start)
        self._segment_size = os.fstat(self._fd).st_size
        if self._segment_size and _last_byte(self._fd, self._segment_size) != b"\n":
            # a line torn by a crash: end it, so the next record is not glued to it, in its own segment whatever
            # the size (a reader never looks for a line's end in the next segment)
            os.write(self._fd, b"\n")
            self._segment_size += 1

    @property
    def size(self) -> int:
        """The journal's end offset: where the next record starts."""
        return self._start + self._segment_size

    def append(self, lines: list[bytes]) -> int:
        """Write the lines; return the offset just past the last one. OSError when they could not be written
        (nothing of them is left in the journal then)."""
        if not lines:
            return self.size
        data = b"".join(lines)
        if self._segment_size and self._segment_size + len(data) > self.segment_bytes:
            self._rotate()
        view = memoryview(data)
        try:
            while view:  # a regular-file write is normally whole; loop for the rare short write
                view = view[os.write(self._fd, view) :]
        except OSError:
            if len(view) < len(data):
                os.ftruncate(self._fd, self._segment_size)  # cut the part that made it: a torn line otherwise
            raise
        self._segment_size += len(data)
        return self.size

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    def _rotate(self) -> None:
        start = self.size
        fd = self._open(start)  # first: a full disk leaves us writing (or failing) where we were
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd, self._start, self._segment_size = fd, start, 0

    def _open(self, start: int) -> int:
        # read too: the last byte
        return os.open(self.dir / segment_name(start), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)


def _tidy(folder: Path) -> None:
    """Leftovers of a process that died while compressing: a partial copy, or a raw segment whose
    gzipped copy was complete."""
    for name in os.listdir(folder):
        if name.endswith(".tmp"):
            (folder / name).unlink(missing_ok=True)
        elif name.endswith(RAW) and os.path.exists(folder / (name[: -len(RAW)] + PACKED)):
            (folder / name).unlink(missing_ok=True)


def _adopt_legacy(run_dir: Path, folder: Path) -> None:
    """A run directory written before segments: its journal.jsonl becomes the first segment."""
    legacy = run_dir / LEGACY_JOURNAL
    if legacy.is_file() and not (folder / segment_name(0)).exists():
        os.replace(legacy, folder / segment_name(0))


def _last_byte(fd: int, size: int) -> bytes:
    return os.pread(fd, 1, size - 1)
