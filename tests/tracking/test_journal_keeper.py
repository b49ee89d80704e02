"""The journal keeper's own promises, on a real journal without a run: a compression stops within a MiB when
the run ends (nothing changed), an error names the file that went missing, and stopping the keeper deletes what
every sink has by then, without waiting past its deadline for a pass that hangs."""

from __future__ import annotations

import os
import threading
import time

import pytest
from support.journal_files import journal_lines, segment_files

from primus.tracking.journal import METRICS, encode, segments
from primus.tracking.journal_keeper import CHUNK, JournalKeeper, Stopped, compress
from primus.tracking.journal_writer import JournalWriter
from primus.tracking.state import CursorStore


def write_journal(run_dir, steps, segment_bytes, pad=0):
    run_dir.mkdir(exist_ok=True)
    writer = JournalWriter(run_dir, segment_bytes)
    for step in steps:
        writer.append([encode(METRICS, step, step, {"loss": step / 2, "pad": "p" * pad})])
    writer.close()


def test_a_compression_stops_within_a_mib_once_the_run_ends_and_changes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(40), segment_bytes=3 * CHUNK, pad=CHUNK // 20)  # a first segment of ~2 MiB
    first = segments(run_dir)[0]
    assert first.size() > 1.5 * CHUNK
    asked = []

    def ending():  # the run ends while the first MiB is being compressed
        asked.append(True)
        return len(asked) > 1

    with pytest.raises(Stopped):
        compress(first, ending)
    assert len(asked) == 2
    assert sorted(os.listdir(run_dir / "journal")) == [f.name for f in segment_files(run_dir)] == [first.path.name]
    assert [r["s"] for r in journal_lines(run_dir)] == list(range(40))


def test_compressing_a_segment_deleted_meanwhile_names_it(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(10), segment_bytes=200)
    first = segments(run_dir)[0]
    first.path.unlink()
    with pytest.raises(FileNotFoundError) as raised:
        compress(first)
    assert raised.value.filename == str(first.path)
    assert not [n for n in os.listdir(run_dir / "journal") if n.endswith(".tmp")]


def test_stopping_deletes_what_every_sink_has_by_then(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(30), segment_bytes=300)
    cursors = CursorStore(run_dir)
    keeper = JournalKeeper(run_dir, "delivered", ["a", "b"], cursors)
    found = segments(run_dir)
    keeper.start()
    while not all(s.packed for s in segments(run_dir)[:-2]):  # its first pass: compressed, nothing delivered yet
        time.sleep(0.01)
    time.sleep(0.1)
    cursors.save("a", "run-a", found[-1].start)  # both sinks have every closed segment now
    cursors.save("b", "run-b", found[-1].start + 5)
    keeper.stop(time.monotonic() + 30)
    assert [s.start for s in segments(run_dir)] == [found[-1].start] and keeper.deleted == len(found) - 1


def test_stopping_does_not_wait_past_its_deadline_for_a_pass_that_hangs(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(30), segment_bytes=300)
    first = segments(run_dir)[0]
    first.path.unlink()
    os.mkfifo(first.path)  # reading it blocks, as a hung file system would
    keeper = JournalKeeper(run_dir, "keep", [], CursorStore(run_dir))
    keeper.start()
    deadline_s = 0.5
    started = time.monotonic()
    try:
        keeper.stop(time.monotonic() + deadline_s)
        waited = time.monotonic() - started
    finally:
        threading.Thread(target=lambda: open(first.path, "wb").close(), daemon=True).start()  # let the pass end
    assert deadline_s * 0.9 <= waited < deadline_s + 5  # the deadline, not the pass, and more than nothing
