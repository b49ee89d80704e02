"""The journal writer on a real run directory: where a segment ends, the files' mode, where a new process goes on
when every earlier segment is compressed, what it tidies after a crash, and an older single journal adopted only
when nothing took its place. Read back the plain way (support.journal_files) and through the reader."""

from __future__ import annotations

import gzip
import shutil
import stat

from support.journal_files import journal_lines, segment_files

from primus.tracking.journal.keeper import compress
from primus.tracking.journal.reader import JournalReader, journal_end, read_all, segments
from primus.tracking.journal.records import METRICS, encode
from primus.tracking.journal.writer import JournalWriter


def _line(step: int) -> bytes:
    return encode(METRICS, step, 1000, {"loss": 0.5})


def test_a_batch_that_fills_a_segment_exactly_stays_in_it_and_the_next_one_starts_a_new_one(tmp_path):
    writer = JournalWriter(tmp_path, segment_bytes=2 * len(_line(0)))
    writer.append([_line(0)])
    writer.append([_line(1)])  # exactly full now
    assert len(segment_files(tmp_path)) == 1
    writer.append([_line(2)])
    writer.close()
    assert [s.start for s in segments(tmp_path)] == [0, 2 * len(_line(0))]
    assert [r["s"] for r in journal_lines(tmp_path)] == [0, 1, 2]


def test_segments_are_readable_by_their_owner_only(tmp_path):
    """They hold the run's params and texts (redacted, but a team's model and data paths all the same)."""
    writer = JournalWriter(tmp_path, segment_bytes=len(_line(0)))
    writer.append([_line(0)])
    writer.append([_line(1)])
    writer.close()
    assert [stat.S_IMODE(f.stat().st_mode) for f in segment_files(tmp_path)] == [0o600, 0o600]


def test_a_new_process_goes_on_after_the_last_segment_even_when_every_one_is_compressed(tmp_path):
    writer = JournalWriter(tmp_path, segment_bytes=3 * len(_line(0)))
    writer.append([_line(step) for step in range(3)])
    writer.append([_line(step) for step in range(3, 5)])  # segments of 3, 2 and 3 lines
    writer.append([_line(step) for step in range(5, 8)])
    writer.close()
    for segment in segments(tmp_path):
        compress(segment)  # `primus tracking sync` and the keeper leave a finished run like this
    end = journal_end(tmp_path)
    resumed = JournalWriter(tmp_path, segment_bytes=3 * len(_line(0)))
    assert resumed.append([_line(8)]) == end + len(_line(8))  # offsets go on from the compressed ones
    resumed.close()
    assert [s.start for s in segments(tmp_path)] == [0, 3 * len(_line(0)), 5 * len(_line(0)), end]
    assert [r.step for r in read_all(tmp_path)] == list(range(9))


def test_a_raw_segment_left_beside_its_complete_copy_is_removed_by_the_next_process(tmp_path):
    """A crash between writing the gzipped copy and deleting the raw segment: the copy is whole, the raw one goes."""
    writer = JournalWriter(tmp_path, segment_bytes=len(_line(0)))
    writer.append([_line(0)])
    writer.append([_line(1)])
    writer.close()
    first = segments(tmp_path)[0]
    shutil.copy(first.path, tmp_path / "raw-copy")
    compress(first)
    shutil.copy(tmp_path / "raw-copy", first.path)  # the raw twin is back, as the crash left it
    JournalWriter(tmp_path).close()
    assert [f.name for f in segment_files(tmp_path)] == [first.path.name + ".gz", segments(tmp_path)[1].path.name]
    assert [r["s"] for r in journal_lines(tmp_path)] == [0, 1]
    assert gzip.decompress((tmp_path / "journal" / (first.path.name + ".gz")).read_bytes()) == _line(0)


def test_an_older_single_journal_is_not_adopted_over_a_first_segment_already_there(tmp_path):
    writer = JournalWriter(tmp_path)
    writer.append([_line(0)])
    writer.close()
    (tmp_path / "journal.jsonl").write_bytes(_line(99))  # an older primus wrote into this run directory too
    JournalWriter(tmp_path).close()
    assert [r["s"] for r in journal_lines(tmp_path)] == [0]
    assert [s.path.name for s in segments(tmp_path)] == [segment_files(tmp_path)[0].name]  # not the older file


def test_a_reader_finds_a_segment_compressed_or_deleted_since_it_last_looked(tmp_path):
    """A sink's reader keeps the segment list it saw; the keeper then compresses (or deletes) a segment it
    goes back to: it finds the gzipped copy and reads the same records, or reads nothing where it is gone."""
    writer = JournalWriter(tmp_path, segment_bytes=3 * len(_line(0)))
    for first in (0, 3, 6):
        writer.append([_line(step) for step in range(first, first + 3)])
    writer.close()
    found = segments(tmp_path)
    reader = JournalReader(tmp_path)
    records, end = reader.read(0)
    assert [r.step for r in records] == [0, 1, 2] and end == found[1].start
    assert [r.step for r in reader.read(found[1].start)[0]] == [3, 4, 5]  # the reader moved on to the next file
    compress(found[0])
    assert reader.read(0) == (records, end)  # its raw file is gone: the copy holds the same lines
    found[1].path.unlink()  # delivered everywhere, deleted
    assert reader.read(found[1].start) == ([], found[1].start)
    reader.close()
