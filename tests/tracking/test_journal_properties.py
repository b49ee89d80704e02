"""Property-based check of the journal (hypothesis): processes that write batches across segments, each
possibly killed at any byte of a write, lines damaged anywhere, closed segments compressed or not. Replaying
the journal, from the start or by a cursor reading any number of bytes at a time, gives every whole record
exactly once, in order, and the cursor ends just past the last whole line."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from primus.tracking.journal.keeper import JournalKeeper
from primus.tracking.journal.reader import JournalReader, journal_end, read_all
from primus.tracking.journal.records import METRICS, encode
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import JournalWriter

damage = st.binary(max_size=40).map(lambda b: b"#" + b.replace(b"\n", b"") + b"\n")  # never a valid JSON line
batch = st.integers(1, 6)
process = st.fixed_dictionaries({
    "writes": st.lists(st.one_of(batch, damage), max_size=8),
    "killed_at": st.none() | st.floats(0, 1),  # the fraction of its last batch written when the process died
    "segment_bytes": st.integers(150, 900),
})


def run_processes(run_dir: Path, processes: list[dict]) -> tuple[list[int], int]:
    """Write as the processes would; return the steps of the whole records and the length of the torn tail."""
    step, whole, torn, all_but_newline = 0, [], 0, []
    for spec in processes:
        writer = JournalWriter(run_dir, spec["segment_bytes"])  # ends a line torn by the previous process
        whole += all_but_newline  # a line cut just before its newline is a whole record once that is added
        for write in spec["writes"]:
            if isinstance(write, bytes):
                writer.append([write])
                continue
            writer.append([encode(METRICS, s, 1000 + s, {"loss": s / 3}) for s in range(step, step + write)])
            whole += range(step, step + write)
            step += write
        if spec["killed_at"] is not None:
            lines = [encode(METRICS, s, 1000 + s, {"loss": s / 3}) for s in range(step, step + 3)]
            data = b"".join(lines)
            cut = data[:round(spec["killed_at"] * len(data))]
            writer.append([cut])
            complete = cut.count(b"\n")
            whole += range(step, step + complete)
            rest = cut[cut.rfind(b"\n") + 1:]
            all_but_newline = [step + complete] if complete < 3 and rest == lines[complete][:-1] else []
            step += 3  # the next process goes on from a later step, as after a checkpoint
            torn = len(rest)
        else:
            torn, all_but_newline = 0, []
        writer.close()
    return whole, torn


@settings(max_examples=100, deadline=None)
@given(processes=st.lists(process, min_size=1, max_size=4), compress=st.booleans(), read_bytes=st.integers(1, 400))
def test_replay_gives_every_whole_record_exactly_once(processes, compress, read_bytes):
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        whole, torn = run_processes(run_dir, processes)
        if compress:
            JournalKeeper(run_dir, "keep", [], CursorStore(run_dir)).compress_closed()
        assert [r.step for r in read_all(run_dir)] == whole

        reader, pos, replayed = JournalReader(run_dir), 0, []
        while True:
            records, next_pos = reader.read(pos, max_bytes=read_bytes)
            if next_pos == pos:
                break
            assert all(r.end <= next_pos for r in records)
            replayed += records
            pos = next_pos
        reader.close()
        assert [r.step for r in replayed] == whole
        assert pos == journal_end(run_dir) - torn  # past the last whole line: only a torn tail is left
