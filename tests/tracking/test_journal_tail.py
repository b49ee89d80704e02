"""The journal's tail and size, against the segment files read the plain way (gzip and json, not the code under
test): the records a resumed run looks at (its last step per destination, the last "end" status) are exactly the
whole lines in the last bytes asked for, from the last two segments at most, wherever the window starts; the
sizes a soak or resume benchmark prints are the journal's bytes and the files' bytes on disk."""

from __future__ import annotations

import gzip
import json

from support.journal_files import segment_files

from primus.tracking.journal.keeper import JournalKeeper
from primus.tracking.journal.reader import (
    has_journal,
    journal_bytes,
    journal_end,
    last_end_status,
    last_steps,
    tail_records,
)
from primus.tracking.journal.records import EVENT, METRICS, encode
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import JournalWriter

DAMAGED = b"#not a record\n"


def write_journal(run_dir, lines, segment_bytes=300, compress=True):
    run_dir.mkdir(exist_ok=True)
    writer = JournalWriter(run_dir, segment_bytes)
    for line in lines:
        writer.append([line])
    writer.close()
    if compress:
        JournalKeeper(run_dir, "keep", [], CursorStore(run_dir)).compress_closed()


def plain_lines(run_dir):
    """(segment index, journal offset where the line starts, offset past it, the record's JSON or None)."""
    found = []
    for index, path in enumerate(segment_files(run_dir)):
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        pos = int(path.name[:20])
        for line in data.split(b"\n")[:-1]:
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            found.append((index, pos, pos + len(line) + 1, obj))
            pos += len(line) + 1
    return found


def mixed_lines():
    lines = []
    for step in range(40):
        lines.append(encode(METRICS, step, 1000 + step, {"loss": step / 3, "pad": "p" * (step % 7)}))
        if step % 9 == 4:
            lines.append(DAMAGED)
        if step % 11 == 0:
            lines.append(encode(EVENT, step, 1000 + step, {"event": "end", "status": f"S{step}"}))
    return lines


def test_the_tail_is_the_whole_lines_in_its_last_bytes_from_the_last_two_segments_wherever_it_starts(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, mixed_lines())
    files = segment_files(run_dir)
    assert len(files) >= 4 and files[0].name.endswith(".gz") and files[-1].name.endswith(".jsonl")
    lines, end = plain_lines(run_dir), journal_end(run_dir)
    last_two = len(files) - 2
    # every window that starts on a line's first byte, one byte before or after it, and past the journal's start
    tails = {end - start + shift for _, start, _, _ in lines for shift in (-1, 0, 1)} | {end, end + 1, end + 40}
    for tail in sorted(tails):
        expected = [(obj["k"], obj["s"], line_end) for index, start, line_end, obj in lines
                    if obj is not None and index >= last_two and start >= end - tail]
        got = [(r.kind, r.step, r.end) for r in tail_records(run_dir, tail)]
        assert got == expected, tail


def test_the_last_step_is_per_destination_whatever_order_they_come_in(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, [encode(METRICS, 10, 1, {"loss": 1.0}), encode(METRICS, 2, 2, {"x": 1.0}, only=("tb",)),
                            encode(METRICS, 7, 3, {"loss": 1.0}), encode(EVENT, 11, 4, {"event": "start"}),
                            encode(METRICS, 5, 5, {"x": 1.0}, only=("mlflow", "tb"))])
    assert last_steps(run_dir) == {None: 10, ("tb",): 2, ("mlflow", "tb"): 5}


def test_the_last_end_status_is_the_last_end_record_whatever_follows_it(tmp_path):
    run_dir = tmp_path / "run"
    assert last_end_status(run_dir) is None  # no journal
    write_journal(run_dir, [encode(EVENT, 0, 1, {"event": "start"}), encode(METRICS, 1, 2, {"loss": 1.0})])
    assert last_end_status(run_dir) is None  # no end yet: the run died running
    write_journal(run_dir, [encode(EVENT, 1, 3, {"event": "end", "status": "FAILED"}),
                            encode(EVENT, 2, 4, {"event": "end", "status": "FINISHED"}),
                            encode(EVENT, 2, 5, {"event": "checkpoint", "status": "saved"}),
                            encode(METRICS, 3, 6, {"status": 1.0})])
    assert last_end_status(run_dir) == "FINISHED"


def test_journal_bytes_are_the_records_bytes_and_the_files_on_disk(tmp_path):
    run_dir = tmp_path / "run"
    assert not has_journal(run_dir) and journal_bytes(run_dir) == (0, 0)
    write_journal(run_dir, mixed_lines())
    files = segment_files(run_dir)
    raw = sum(len(gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes()) for f in files)
    disk = sum(f.stat().st_size for f in files)
    assert has_journal(run_dir) and disk < raw
    assert journal_bytes(run_dir) == (raw, disk) and journal_end(run_dir) == raw


def test_a_last_segment_that_cannot_be_read_is_passed_over_for_the_one_before(tmp_path):
    run_dir = tmp_path / "run"
    write_journal(run_dir, mixed_lines(), compress=False)
    *_, before, last = segment_files(run_dir)
    cut = last.with_name(last.name + ".gz")  # a gzipped copy cut short (one is never renamed in, but be safe)
    cut.write_bytes(gzip.compress(last.read_bytes())[:-12] + (1000).to_bytes(4, "little"))
    last.unlink()
    steps = [r.step for r in tail_records(run_dir, 10_000) if r.kind == METRICS]
    assert steps and steps == [json.loads(line)["s"] for line in before.read_bytes().splitlines()
                               if line.startswith(b'{"k":"m"')]
