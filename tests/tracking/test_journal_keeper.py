"""The journal keeper's own promises, on a real journal without a run: a compression stops within a MiB when
the run ends (nothing changed), an error names the file that went missing, and stopping the keeper deletes what
every sink has by then, without waiting past its deadline for a pass that hangs."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
from support.journal_files import journal_lines, segment_files
from support.threads import threads_started_by

from primus.tracking.journal.keeper import CHUNK, JournalKeeper, Stopped, compress
from primus.tracking.journal.reader import segments
from primus.tracking.journal.records import METRICS, encode
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import JournalWriter


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
    _wait_until_blocked_in(keeper._thread, "compress")  # else stop() may come before the pass, and not wait at all
    deadline_s = 0.5
    started = time.monotonic()
    try:
        keeper.stop(time.monotonic() + deadline_s)
        waited = time.monotonic() - started
    finally:
        threading.Thread(target=lambda: open(first.path, "wb").close(), daemon=True).start()  # let the pass end
    assert deadline_s * 0.9 <= waited < deadline_s + 5  # the deadline, not the pass, and more than nothing


def _wait_until_blocked_in(thread: threading.Thread, function: str, bound_s: float = 30.0) -> None:
    """Until ``thread``'s stack has a frame of ``function`` (the keeper opening the FIFO), at most ``bound_s``."""
    give_up = time.monotonic() + bound_s
    while time.monotonic() < give_up:
        frame = sys._current_frames().get(thread.ident)
        while frame is not None:
            name = frame.f_code.co_name  # in mutmut's copy of the module: x_<function>__mutmut_orig or _<n>
            if name == function or name.startswith(f"x_{function}__mutmut"):
                return
            frame = frame.f_back
        time.sleep(0.01)
    raise AssertionError(f"the keeper's thread did not reach {function}() within {bound_s} s")


def test_with_retention_delivered_the_sinks_cursors_are_read_again_without_a_new_write(tmp_path, monkeypatch):
    """A sink catches up long after the last write (a tracker back after an outage): the keeper deletes what it
    has on its own next look, every CHECK_S, not only when the journal grows."""
    monkeypatch.setattr("primus.tracking.journal.keeper.CHECK_S", 0.05)
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(30), segment_bytes=300)
    cursors = CursorStore(run_dir)
    found = segments(run_dir)
    keeper = JournalKeeper(run_dir, "delivered", ["a"], cursors)
    keeper.start()
    while not all(s.packed for s in segments(run_dir)[:-2]):  # its first pass: compressed, nothing delivered yet
        time.sleep(0.01)
    time.sleep(0.2)
    assert keeper.deleted == 0
    cursors.save("a", "run-a", found[1].start)  # the first segment is delivered: nothing is written after
    deadline = time.monotonic() + 30
    while keeper.deleted == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert keeper.deleted == 1 and segments(run_dir)[0].start == found[1].start
    keeper.stop(time.monotonic() + 30)


def test_with_retention_keep_nothing_is_deleted_even_when_every_sink_has_it(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(30), segment_bytes=300)
    cursors = CursorStore(run_dir)
    found = segments(run_dir)
    cursors.save("a", "run-a", found[-1].start + 100)
    keeper = JournalKeeper(run_dir, "keep", ["a"], cursors)
    keeper.start()
    keeper.stop(time.monotonic() + 30)
    assert [s.start for s in segments(run_dir)] == [s.start for s in found] and keeper.deleted == 0


def test_a_housekeeping_error_is_said_once_and_the_segments_stay(tmp_path, primus_caplog):
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(30), segment_bytes=300)
    cursors = CursorStore(run_dir)
    (run_dir / "cursors" / "a.json").mkdir()  # the cursor cannot be read: every pass fails
    found = segments(run_dir)
    keeper = JournalKeeper(run_dir, "delivered", ["a"], cursors)
    keeper.start()
    keeper.notify(found[-1].start + 10_000)  # another pass
    keeper.stop(time.monotonic() + 30)  # and the last one
    said = [r.getMessage() for r in primus_caplog.records if "housekeeping" in r.getMessage()]
    assert said == [
        f"primus tracking: journal housekeeping in {run_dir} failed ([Errno 21] Is a directory: "
        f"'{run_dir / 'cursors' / 'a.json'}'); segments stay as they are"
    ]
    assert [s.start for s in segments(run_dir)] == [s.start for s in found]


def test_stopping_in_the_middle_of_a_compression_leaves_the_segment_raw(tmp_path):
    """The run's end does not wait for a long compression: it stops within a MiB, the raw segment stays whole."""
    run_dir = tmp_path / "run"
    write_journal(run_dir, range(400), segment_bytes=24 * CHUNK, pad=CHUNK // 20)  # a first segment of ~20 MiB
    write_journal(run_dir, range(400, 402), segment_bytes=24 * CHUNK, pad=13 * CHUNK)  # two more segments
    first = segments(run_dir)[0]
    assert len(segments(run_dir)) == 3 and first.size() > 16 * CHUNK
    keeper = JournalKeeper(run_dir, "keep", [], CursorStore(run_dir))
    keeper.start()
    deadline = time.monotonic() + 30
    while not [n for n in os.listdir(run_dir / "journal") if n.endswith(".tmp")] and time.monotonic() < deadline:
        time.sleep(0.001)  # the compression is under way
    keeper.stop(time.monotonic() + 60)
    assert not segments(run_dir)[0].packed
    assert [r["s"] for r in journal_lines(run_dir)] == list(range(402))


def test_the_keeper_runs_on_one_daemon_thread_named_for_it(tmp_path):
    """Named for py-spy and faulthandler dumps; a daemon, so a trainer that never stops it still exits."""
    write_journal(tmp_path, range(3), segment_bytes=300)
    keeper = JournalKeeper(tmp_path, "keep", [], CursorStore(tmp_path))
    assert threads_started_by(keeper.start) == [("primus-tracking-journal", True)]
    keeper.stop(time.monotonic() + 30)
