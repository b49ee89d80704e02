"""Housekeeping of the run's journal on a low-priority thread of the training process: gzip the segments the
writer closed (told how far the journal goes as the sink workers are: ``notify``), and with ``journal_retention:
delivered`` delete a closed segment once every sink of the run has saved a cursor past it.

The segment just before the one being written stays raw until the next one closes: the journal's tail (what
resume reads to find the steps already tracked, and the end status) is then always read uncompressed, and so
is what a sink that lags a little reads. zlib releases the GIL while it compresses, so the training thread
does not wait for it; the thread's own niceness keeps it below training where cores are short.

A W&B cursor is saved only when its run is closed (``WandbSink.durability``): with W&B on, segments
are deleted at the end of the run, not during it. A sink that is off for the run (its package missing) saves no
cursor, so nothing is deleted: ``primus tracking sync`` may still need the whole journal.
"""

from __future__ import annotations

import gzip
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from primus.redaction import redact_text
from primus.tracking.journal.reader import PACKED, Segment, segment_name, segments
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import SEGMENT_BYTES

log = logging.getLogger("primus.tracking")

GZIP_LEVEL = 6  # zlib's default: ~3x on journal lines; level 1 is 2.5x faster to write and 10% larger
CHECK_S = 5.0  # with retention "delivered": how often the sinks' cursors are read
NICENESS = 19
CHUNK = 1 << 20


class Stopped(Exception):
    """Compression given up because the run is ending (the next launch's keeper compresses the segment)."""


def compress(segment: Segment, stopping: Callable[[], bool] = lambda: False) -> None:
    """Write ``<start>.jsonl.gz`` beside a raw segment (through a temporary file, so a crash leaves no half
    copy under the final name), then remove the raw one. OSError, or Stopped when ``stopping()`` turns true
    (checked every MiB, so a run's exit does not wait for a whole segment): nothing changed."""
    packed = segment.path.with_name(segment_name(segment.start, PACKED))
    tmp = packed.with_name(packed.name + ".tmp")
    try:
        with open(segment.path, "rb") as src, open(tmp, "wb") as dst:
            with gzip.GzipFile(filename="", fileobj=dst, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as gz:
                while chunk := src.read(CHUNK):
                    if stopping():
                        raise Stopped
                    gz.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, packed)
    except (OSError, Stopped):
        tmp.unlink(missing_ok=True)
        raise
    segment.path.unlink(missing_ok=True)  # a reader that has it open reads on; a new one finds the copy


class JournalKeeper:
    def __init__(
        self,
        run_dir: Path,
        retention: str,
        sinks: Sequence[str],
        cursors: CursorStore,
        segment_bytes: int = SEGMENT_BYTES,
    ):
        self.run_dir = run_dir
        self.segment_bytes = segment_bytes
        self.retention = retention
        self.sinks = tuple(sinks)
        self.cursors = cursors
        self.deleted = 0  # segments deleted once delivered
        self._closes_after = 0  # the journal's end past which the writer has closed the last segment seen
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._warned = False
        self._thread = threading.Thread(target=self._main, name="primus-tracking-journal", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self, end: int) -> None:
        """The journal now ends at ``end`` (told as the sink workers are). The writer starts a segment when a batch
        would take the current one past ``segment_bytes``: an end past that closed a segment, to compress."""
        if end > self._closes_after:
            self._wake.set()

    def stop(self, deadline: float) -> None:
        """Finish the pass under way (within ``deadline``), then delete what the sinks have by now: at the end
        of a run every sink has closed and saved its cursor."""
        self._stop.set()
        self._wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if not self._thread.is_alive():
            self._guarded(self.delete_delivered)

    # -- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)  # Linux: this thread only
        except (AttributeError, OSError):
            pass
        while not self._stop.is_set():
            self._guarded(self.compress_closed)
            self._guarded(self.delete_delivered)
            self._wake.wait(CHECK_S if self.retention == "delivered" else None)
            self._wake.clear()

    def _guarded(self, work) -> None:
        try:
            work()
        except OSError as e:  # a full disk: the raw segment stays, tried again at the next pass
            if not self._warned:
                self._warned = True
                log.warning(
                    "primus tracking: journal housekeeping in %s failed (%s); segments stay as they are",
                    self.run_dir,
                    redact_text(str(e)),
                )

    def compress_closed(self) -> None:
        found = segments(self.run_dir)
        if found:
            self._closes_after = found[-1].start + self.segment_bytes
        for segment in found[:-2]:
            if not segment.packed:
                try:
                    compress(segment, self._stop.is_set)
                except Stopped:
                    return

    def delete_delivered(self) -> None:
        if self.retention != "delivered" or not self.sinks:
            return
        delivered = min(self.cursors.offset(sink) for sink in self.sinks)
        found = segments(self.run_dir)
        for segment, following in zip(found, found[1:], strict=False):  # never the last: it is being written
            if following.start > delivered:
                return
            segment.path.unlink(missing_ok=True)
            self.deleted += 1
