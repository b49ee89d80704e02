"""Reads the run's journal, the durable record: a folder of segments, ``<run_dir>/journal/<start>.jsonl``, one JSON
line per record (``records.encode``). The hub appends before any sink sees a record; every sink reads forward from its
own cursor, so one that fell behind catches up from the files, and ``primus tracking sync`` replays them later.

Offsets count bytes of the whole journal as if its segments were one file; a segment is named by the offset of its
first byte, closed ones are gzipped (``keeper``). Finding an offset lists the folder and reads one segment: nothing
here reads the journal from its beginning. docs/tracking-internals.md#the-journal says more.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from primus.tracking.journal.files import JOURNAL_DIR, LEGACY_JOURNAL
from primus.tracking.journal.records import EVENT, METRICS, Record, decode

RAW, PACKED = ".jsonl", ".jsonl.gz"
READ_BYTES = 4 << 20


def segment_name(start: int, suffix: str = RAW) -> str:
    return f"{start:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    path: Path

    @property
    def packed(self) -> bool:
        return self.path.name.endswith(PACKED)

    def open(self) -> io.BufferedIOBase:
        return gzip.GzipFile(self.path, "rb") if self.packed else open(self.path, "rb")

    def size(self) -> int:
        """Its length in journal bytes (uncompressed); 0 when it is gone."""
        try:
            if not self.packed:
                return self.path.stat().st_size
            with open(self.path, "rb") as f:  # gzip's trailer: the length mod 2**32 (a segment is far smaller)
                f.seek(-4, os.SEEK_END)
                return int.from_bytes(f.read(4), "little")
        except (FileNotFoundError, OSError):
            return 0


def segments(run_dir: Path) -> list[Segment]:
    """The journal's segments in order; a raw segment where its gzipped copy is being made."""
    found: dict[int, Path] = {}
    try:
        names = sorted(os.listdir(run_dir / JOURNAL_DIR))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in names:
        for suffix in (PACKED, RAW):  # sorted: "x.jsonl" before "x.jsonl.gz", so a raw twin wins
            digits = name[: -len(suffix)]
            if name.endswith(suffix) and len(digits) == 20 and digits.isdigit():
                found.setdefault(int(digits), run_dir / JOURNAL_DIR / name)
                break
    legacy = run_dir / LEGACY_JOURNAL
    if 0 not in found and legacy.is_file():
        found[0] = legacy
    return [Segment(start, found[start]) for start in sorted(found)]


def has_journal(run_dir: Path) -> bool:
    return bool(segments(run_dir))


def journal_end(run_dir: Path) -> int:
    """The offset just past the journal's last byte (0 when there is none)."""
    found = segments(run_dir)
    return found[-1].start + found[-1].size() if found else 0


def journal_bytes(run_dir: Path) -> tuple[int, int]:
    """(journal bytes, bytes on disk): what the records take uncompressed, and what the files take."""
    found = segments(run_dir)
    disk = 0
    for segment in found:
        try:
            disk += segment.path.stat().st_size
        except FileNotFoundError:  # deleted once delivered, meanwhile
            pass
    return (found[-1].start + found[-1].size() if found else 0), disk


class JournalReader:
    """Reads the journal by offset, one segment at a time, keeping the segment it read last open. Not
    thread-safe: one per reading thread."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self._segments: list[Segment] = []
        self._file: io.BufferedIOBase | None = None
        self._open_segment: Segment | None = None

    def read(self, start: int, stop: int | None = None, max_bytes: int = READ_BYTES) -> tuple[list[Record], int]:
        """Complete records from offset ``start`` up to ``stop`` (default: the end), reading about
        ``max_bytes`` of one segment; returns them and the offset just past the last complete line read.
        A ``start`` below the first segment (deleted once delivered) moves on to the first segment."""
        found = self._segment_at(start)
        if found is None:
            return [], start
        segment, following = found
        if start < segment.start:  # deleted segments: nothing to read before this one
            return [], segment.start
        limit = max_bytes if stop is None else min(max_bytes, stop - start)
        if following is not None:
            limit = min(limit, following - start)  # whole lines: a record never spans two segments
        chunk = self._read_at(segment, start - segment.start, max(limit, 0))
        return parse(chunk, start)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = self._open_segment = None

    def _segment_at(self, offset: int) -> tuple[Segment, int | None] | None:
        """The segment holding ``offset`` and where the next one starts (None: it is the last)."""
        for listed in (False, True):
            found = self._segments
            for i, segment in enumerate(found):
                following = found[i + 1].start if i + 1 < len(found) else None
                if following is not None and offset >= following:
                    continue
                if following is None and not listed and offset >= segment.start + segment.size():
                    break  # at the end of the last segment known: the writer may have started another
                return segment, following
            self._segments = segments(self.run_dir)
        return None

    def _read_at(self, segment: Segment, offset: int, nbytes: int) -> bytes:
        for _ in range(3):  # a raw segment replaced by its gzipped copy, or deleted, under us: find it again
            try:
                file = self._file
                if file is None or self._open_segment != segment:
                    self.close()
                    self._file = file = segment.open()
                    self._open_segment = segment
                if file.tell() != offset:
                    file.seek(offset)  # gzip: forward from here, or from the start if going back
                return self._read_lines(file, nbytes)
            except FileNotFoundError:
                self.close()
                self._segments = segments(self.run_dir)
                match = [s for s in self._segments if s.start == segment.start]
                if not match:
                    return b""
                segment = match[0]
            except (EOFError, gzip.BadGzipFile):  # a gzipped copy cut by a crash: never renamed in, but be safe
                self.close()
                return b""
        return b""

    @staticmethod
    def _read_lines(file: io.BufferedIOBase, nbytes: int) -> bytes:
        chunk = more = file.read(nbytes)
        while more and b"\n" not in more:  # a line longer than nbytes (however long): read on to its end
            more = file.read(nbytes)
            chunk += more
        return chunk


def parse(chunk: bytes, start: int) -> tuple[list[Record], int]:
    """The complete lines of ``chunk`` (read from offset ``start``) as records, and the offset past the last."""
    records = []
    pos = start
    # split on "\n" alone (a damaged line may hold a "\r"); the piece after the last one is a line still being
    # written, or cut by the read size: read it next time
    for line in chunk.split(b"\n")[:-1]:
        pos += len(line) + 1
        try:
            records.append(decode(line, pos))
        except (ValueError, KeyError, TypeError):
            continue  # a torn line left by a crash: skip it, keep the rest
    return records, pos


def read_all(run_dir: Path) -> Iterator[Record]:
    """Every record from the first segment on, in order (the report; tests)."""
    reader = JournalReader(run_dir)
    offset, end = 0, journal_end(run_dir)
    try:
        while offset < end:
            records, next_offset = reader.read(offset)
            if next_offset == offset:
                break  # only a line still being written is left
            offset = next_offset
            yield from records
    finally:
        reader.close()


def tail_records(run_dir: Path, tail_bytes: int) -> list[Record]:
    """The whole records in the journal's last ``tail_bytes`` (from the last segment, and the one before
    it when the last is shorter: at most one gzipped segment is read)."""
    found = segments(run_dir)
    records: list[Record] = []
    for segment in reversed(found[-2:]):
        size = segment.size()
        start = max(0, size - tail_bytes)
        before = min(start, 1)  # read from the byte before the window: is it a line's end?
        try:
            with segment.open() as f:
                f.seek(start - before)
                chunk = f.read(size - start + before)
        except (FileNotFoundError, EOFError, gzip.BadGzipFile):
            continue
        # the window may start inside a line: leave out the bytes up to the first line's end (none when the byte
        # before the window ends a line)
        skip = chunk.find(b"\n") + 1 if before else 0
        got, _ = parse(chunk[skip:], segment.start + start - before + skip)
        records = got + records
        tail_bytes -= size
        if tail_bytes <= 0:
            break
    return records


def last_steps(run_dir: Path, tail_bytes: int = 1 << 20) -> dict[tuple[str, ...] | None, int]:
    """The highest metrics step per destination (``only``) in the journal's last ``tail_bytes``: where
    an earlier process of this run got to (steps only grow within a process)."""
    last: dict[tuple[str, ...] | None, int] = {}
    for r in tail_records(run_dir, tail_bytes):
        if r.kind == METRICS:
            last[r.only] = max(r.step, last.get(r.only, r.step))
    return last


def last_end_status(run_dir: Path, tail_bytes: int = 64 << 10) -> str | None:
    """The status of the journal's last "end" record, if its last ``tail_bytes`` hold one."""
    ends = [
        r.data.get("status")
        for r in tail_records(run_dir, tail_bytes)
        if r.kind == EVENT and r.data.get("event") == "end"
    ]
    return ends[-1] if ends else None
