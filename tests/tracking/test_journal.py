"""The journal as a folder of segments: rotated at a size, closed ones gzipped, read across segments
(compressed or not) by offset and from the tail, deleted once delivered when asked, and an older run
directory's single journal.jsonl still read and adopted. Read back the plain way (support.journal_files)."""

from __future__ import annotations

import gzip
import os
import shutil

from support.journal_files import journal_lines, segment_files
from support.readers import mlflow_history

from primus.cli.main import main as primus_cli
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.journal.keeper import JournalKeeper, Stopped, compress
from primus.tracking.journal.reader import (
    READ_BYTES,
    JournalReader,
    journal_end,
    last_end_status,
    last_steps,
    read_all,
    segments,
)
from primus.tracking.journal.records import (
    EVENT,
    METRICS,
    TEXT,
    Alert,
    Busy,
    Metrics,
    NamedEvent,
    Record,
    Text,
    encode,
    event_of,
)
from primus.tracking.journal.run_state import CursorStore, RunState
from primus.tracking.journal.writer import JournalWriter

SEGMENT = 4096


def logged_run(run_dir, steps, **kw):
    run = start_run(TrackingConfig(run_dir=run_dir, journal_segment_bytes=SEGMENT, **kw))
    for step in steps:
        run.log(step, {"loss": step / 8, "lr": 1e-3})
        if step % 20 == 0:
            run.flush(10, sinks=())  # journaled now: one hub tick per 20 steps, several segments
    run.finish()
    return run


def metric_steps(run_dir, skip_torn=False):
    return [r["s"] for r in journal_lines(run_dir, skip_torn) if r["k"] == METRICS]


def cursor_read(run_dir, pos, max_bytes=READ_BYTES):
    """(steps, offset) read as a sink does from ``pos``: one segment's worth at a time until nothing moves."""
    reader, steps = JournalReader(run_dir), []
    while True:
        records, next_pos = reader.read(pos, max_bytes=max_bytes)
        if next_pos == pos:
            return steps, pos
        steps, pos = steps + [r.step for r in records], next_pos


def test_each_records_event_is_decoded_to_its_type():
    def event(kind, data, ts_ms=2000):
        return event_of(Record(kind, 3, ts_ms, data, 0))

    assert event(METRICS, {"lm loss": 1.5}) == Metrics({"lm loss": 1.5})
    assert event(TEXT, {"tag": "t", "text": "x"}) == Text("t", "x")
    alert = {"event": "alert", "kind": "nan", "iteration": 7, "text": "loss is nan", "notified": True}
    assert event(EVENT, alert) == Alert("nan", 7, "loss is nan", 2.0)
    assert event(EVENT, {"event": "busy", "what": "evaluation", "on": True}) == Busy("evaluation", True)
    assert event(EVENT, {"event": "busy", "what": "checkpoint save", "on": False, "after_step": 9}) == Busy(
        "checkpoint save", False, 9
    )
    assert event(EVENT, {"event": "start", "pid": 1}) == NamedEvent("start", {"event": "start", "pid": 1})


def test_segments_rotate_at_their_size_and_read_as_one_journal_compressed_or_not(tmp_path):
    run_dir = tmp_path / "run"
    logged_run(run_dir, range(300))
    JournalKeeper(run_dir, "keep", [], CursorStore(run_dir)).compress_closed()
    files = segment_files(run_dir)
    assert len(files) > 4
    assert all(f.name.endswith(".jsonl.gz") for f in files[:-2]) and all(f.name.endswith(".jsonl") for f in files[-2:])
    assert metric_steps(run_dir) == list(range(300))  # every record once, in order, across the files
    assert [r.step for r in read_all(run_dir) if r.kind == METRICS] == list(range(300))
    # offsets count journal bytes: each segment is named by where it starts, and a cursor anywhere reads on from there
    found = segments(run_dir)
    assert [s.start for s in found] == [0, *(a.start + a.size() for a in found[:-1])]
    middle = found[2]
    records, pos = JournalReader(run_dir).read(middle.start + 1)  # inside a gzipped segment, past a line start
    assert records and pos <= found[3].start and records[0].end > middle.start + 1


def test_a_journal_ends_where_its_last_segment_ends_and_an_empty_one_at_0(tmp_path):
    (tmp_path / "journal").mkdir()
    assert journal_end(tmp_path) == 0  # nothing logged yet: a sink's cursor 0 has it all
    logged_run(tmp_path / "run", range(5))  # one segment: the keeper compresses a closed one meanwhile
    last = segments(tmp_path / "run")[-1]
    written = sum(f.stat().st_size for f in segment_files(tmp_path / "run"))  # none compressed
    assert journal_end(tmp_path / "run") == last.start + last.size() == written


def test_the_tail_is_read_from_the_last_segments_only(tmp_path):
    run_dir = tmp_path / "run"
    logged_run(run_dir, range(300))
    JournalKeeper(run_dir, "keep", [], CursorStore(run_dir)).compress_closed()
    assert last_steps(run_dir) == {None: 299}
    assert last_end_status(run_dir) == "FINISHED"
    writer = JournalWriter(run_dir, SEGMENT)
    writer.append([encode(METRICS, 300, 1, {"loss": 1.0})])  # a step where the run's end records are
    writer.append([b"x" * SEGMENT + b"\n", encode(EVENT, 0, 1, {"event": "start"})])  # a fresh segment, no step
    writer.close()
    assert last_steps(run_dir, tail_bytes=2 * SEGMENT) == {None: 300}  # from the segment before


def test_a_resumed_run_continues_the_segments_and_skips_steps_already_tracked(tmp_path):
    run_dir = tmp_path / "run"
    logged_run(run_dir, range(100))
    run = logged_run(run_dir, range(90, 120))  # restarted from a checkpoint at step 90
    assert metric_steps(run_dir) == list(range(120))
    assert run.stats()["dropped"] == {"already_tracked": 10}


def test_damaged_lines_in_the_middle_are_skipped_and_a_cursor_reaches_the_end(tmp_path):
    lines = [encode(METRICS, s, s, {"loss": s / 2}) for s in range(10)]
    writer = JournalWriter(tmp_path, SEGMENT)
    writer.append(lines[:4] + [lines[4][:9] + b"\n", b"\xff not json\n", b'{"k":"m"}\n'] + lines[4:])
    writer.close()
    assert [r.step for r in read_all(tmp_path)] == list(range(10))
    assert cursor_read(tmp_path, 0, max_bytes=50) == (list(range(10)), journal_end(tmp_path))


def test_a_line_torn_at_the_end_of_a_full_segment_is_ended_in_it_and_read_past(tmp_path):
    line = encode(METRICS, 0, 1, {"loss": 0.5})
    writer = JournalWriter(tmp_path, segment_bytes=2 * len(line) - 5)
    writer.append([line, line[:-5]])  # killed in the middle of a write that filled the segment
    writer.close()
    writer = JournalWriter(tmp_path, segment_bytes=2 * len(line) - 5)  # the restarted process
    writer.append([encode(METRICS, 1, 2, {"loss": 1.0})])
    writer.close()
    assert [r.step for r in read_all(tmp_path)] == [0, 1]
    assert cursor_read(tmp_path, len(line)) == ([1], journal_end(tmp_path))  # a cursor just before the torn line


def test_an_older_run_directorys_single_journal_is_read_then_adopted_as_the_first_segment(tmp_path):
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    legacy = [encode(EVENT, 0, 1, {"event": "start"}), *(encode(METRICS, s, 2 + s, {"loss": s / 2}) for s in range(50))]
    (run_dir / "journal.jsonl").write_bytes(b"".join(legacy) + b'{"k":"m","s":50,')  # and a line torn by a crash
    (run_dir / "run.json").write_text('{"run": {"status": "KILLED"}}')
    assert [r.step for r in read_all(run_dir) if r.kind == METRICS] == list(range(50))
    assert last_steps(run_dir) == {None: 49} and journal_end(run_dir) == (run_dir / "journal.jsonl").stat().st_size

    logged_run(run_dir, range(45, 60))  # a newer Primus resumes it
    assert not (run_dir / "journal.jsonl").exists()
    # the first segment, compressed once closed: the resumed run's records (with goodput's figures) fill segments
    assert segment_files(run_dir)[0].name in ("00000000000000000000.jsonl", "00000000000000000000.jsonl.gz")
    assert metric_steps(run_dir, skip_torn=True) == list(range(60))  # the torn line was ended, not glued to the next
    # steps 50-59, start, the goodput breakdown (a text and an event), end: none lost
    assert len(journal_lines(run_dir, skip_torn=True)) == len(legacy) + 10 + 4


def test_an_older_run_directorys_single_journal_syncs_as_it_is(tmp_path, mlflow_uri, mlflow_client):
    run_dir = tmp_path / "old"
    logged_run(run_dir, range(1, 31), experiment_name="older-layout", delivery="thread", exit_deadline_s=1,
               mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:9"))  # MLflow unreachable: it got nothing
    raw = (gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes() for f in segment_files(run_dir))
    (run_dir / "journal.jsonl").write_bytes(b"".join(raw))
    shutil.rmtree(run_dir / "journal")  # the layout before segments
    assert primus_cli(["tracking", "sync", str(run_dir), "--tracking-uri", mlflow_uri]) == 0
    run_id = RunState(run_dir).section("mlflow")["run_id"]
    assert mlflow_history(mlflow_client, run_id, "loss") == [(s, s / 8) for s in range(1, 31)]
    assert sorted(os.listdir(run_dir / "cursors")) == ["mlflow.json"] and not (run_dir / "journal").exists()


def test_retention_delivered_deletes_what_every_sink_has_and_keeps_what_one_lacks(tmp_path):
    tensorboard = TensorBoardConfig(log_dir=tmp_path / "tb")
    kept = tmp_path / "kept"
    logged_run(kept, range(200), tensorboard=tensorboard, journal_retention="delivered", delivery="thread",
               exit_deadline_s=1,
               mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:9"))  # nothing listens: MLflow has nothing
    assert len(segment_files(kept)) >= 3 and metric_steps(kept) == list(range(200))

    trimmed = tmp_path / "trimmed"
    logged_run(trimmed, range(200), tensorboard=tensorboard, journal_retention="delivered")
    [last] = segments(trimmed)  # only the segment being written is left
    assert last.start > 0 and journal_end(trimmed) == CursorStore(trimmed).offset("tensorboard")
    records, pos = JournalReader(trimmed).read(0)  # a cursor before it moves on to it
    assert (records, pos) == ([], last.start)


def test_a_closed_segment_is_compressed_while_the_run_goes_on(tmp_path):
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", journal_segment_bytes=SEGMENT))
    step = 0
    while not any(f.name.endswith(".gz") for f in segment_files(run.run_dir)) and step < 20_000:
        run.log(step, {"loss": 1.0})
        step += 1
        if step % 100 == 0:
            run.flush(10)
    run.finish()
    assert any(f.name.endswith(".gz") for f in segment_files(run.run_dir))
    assert not [n for n in os.listdir(run.run_dir / "journal") if n.endswith(".tmp")]
    assert metric_steps(run.run_dir) == list(range(step))


def test_a_crash_while_compressing_leaves_nothing_the_next_process_does_not_clean(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    writer = JournalWriter(run_dir, segment_bytes=200)
    for step in range(12):
        writer.append([encode(METRICS, step, step, {"loss": step / 2})])
    writer.close()
    crashed = tmp_path / "crashed"

    def crash_now():  # the journal folder as a SIGKILL at this moment of the copy leaves it
        shutil.copytree(run_dir, crashed)
        return True

    try:
        compress(segments(run_dir)[0], stopping=crash_now)
    except Stopped:
        pass
    assert sorted(os.listdir(crashed / "journal")) != sorted(f.name for f in segment_files(crashed))  # a partial copy
    JournalWriter(crashed).close()  # the next process of the run
    assert sorted(os.listdir(crashed / "journal")) == sorted(f.name for f in segment_files(crashed))
    assert metric_steps(crashed) == list(range(12))
