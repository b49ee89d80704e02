"""Resume cost against journal length: a run directory whose journal holds ``--steps`` logged steps x 60 metrics
(generated through the journal writer: 64 MiB segments, the closed ones gzipped as a run leaves them), then a
restarted job resumes it. Measured side by side with a fresh run directory:

* ``start_run`` (the training thread waits for it): directory, lock, ids, the already-tracked check
  (the journal's tail), the delivery process started;
* until the first new step is journaled, and until TensorBoard (in the delivery process) has it;
* a delivery cursor in the middle of the last gzipped segment: the first read from there (what
  ``primus tracking sync`` and a lagging sink pay: at most one segment is decompressed).

The metric values repeat from a pool of 1000 steps' worth, so generating 2 M steps takes minutes, not hours;
what resuming reads does not depend on the values.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/resume_cost.py --steps 2000000
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.journal.keeper import compress
from primus.tracking.journal.reader import JournalReader, journal_bytes, last_steps, segments
from primus.tracking.journal.records import EVENT, METRICS, encode
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import JournalWriter

MiB = 1 << 20
NAMES = [f"perf/metric_{i:02d}" for i in range(60)]
BATCH = 1000


def generate(run_dir: Path, steps: int, segment_bytes: int) -> None:
    run_dir.mkdir(parents=True)
    rng = random.Random(0)
    pool = [json.dumps({n: rng.random() * 100 for n in NAMES}, separators=(",", ":")).encode() for _ in range(1000)]
    writer = JournalWriter(run_dir, segment_bytes)
    writer.append([encode(EVENT, 0, 1, {"event": "start", "pid": 1, "resumed": False})])
    t0 = 1_700_000_000_000
    for first in range(1, steps + 1, BATCH):
        writer.append([b'{"k":"m","s":%d,"t":%d,"d":%s}\n' % (s, t0 + s, pool[s % len(pool)])
                       for s in range(first, min(first + BATCH, steps + 1))])
    writer.append([encode(EVENT, 0, t0 + steps + 1, {"event": "end", "status": "KILLED", "dropped": {}})])
    writer.close()
    for segment in segments(run_dir)[:-2]:  # as the run's keeper leaves them
        compress(segment)
    (run_dir / "run.json").write_text(json.dumps({"run": {"status": "KILLED"}}))


def resume(run_dir: Path, tb_dir: Path, last_step: int) -> dict[str, float]:
    end = journal_bytes(run_dir)[0]
    if end:  # TensorBoard had everything the killed process journaled
        CursorStore(run_dir).save("tensorboard", str(tb_dir), end)
    t = time.perf_counter()
    run = start_run(TrackingConfig(run_dir=run_dir, tensorboard=TensorBoardConfig(log_dir=tb_dir),
                                   exit_deadline_s=120))
    started = time.perf_counter() - t
    for step in range(last_step - 4, last_step + 6):  # restarted from a checkpoint 5 steps back
        run.log(step, {n: 1.0 for n in NAMES})
    assert run.flush(60, sinks=())
    journaled = time.perf_counter() - t
    assert run.flush(120)
    delivered = time.perf_counter() - t
    already = run.stats()["dropped"].get("already_tracked", 0)
    run.finish()
    return {"start_run": started, "journaled": journaled, "delivered": delivered, "already_tracked": already}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2_000_000)
    parser.add_argument("--segment-mib", type=int, default=64)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="primus-resume-"))
    try:
        long_run, fresh = work / "long", work / "fresh"
        t = time.perf_counter()
        generate(long_run, args.steps, args.segment_mib * MiB)
        raw, disk = journal_bytes(long_run)
        print(f"generated {args.steps:,} steps x {len(NAMES)} metrics in {time.perf_counter() - t:,.0f} s: "
              f"{raw / MiB:,.0f} MiB of journal, {disk / MiB:,.0f} MiB on disk, {len(segments(long_run))} segments")
        t = time.perf_counter()
        assert last_steps(long_run) == {None: args.steps}
        print(f"already-tracked check alone (last_steps): {(time.perf_counter() - t) * 1000:,.1f} ms")
        packed = [s for s in segments(long_run) if s.packed]
        if packed:
            cursor = packed[-1].start + packed[-1].size() // 2
            t = time.perf_counter()
            records, _ = JournalReader(long_run).read(cursor)
            assert records and records[0].kind == METRICS
            print(f"first read from a cursor mid-way through a gzipped segment: "
                  f"{(time.perf_counter() - t) * 1000:,.0f} ms")
        for name, run_dir, last in (("fresh run directory", fresh, 5), (f"{args.steps:,}-step journal", long_run,
                                                                          args.steps)):
            got = resume(run_dir, work / f"tb-{run_dir.name}", last)
            print(f"{name}: start_run {got['start_run'] * 1000:,.0f} ms; first step journaled "
                  f"{got['journaled'] * 1000:,.0f} ms; in TensorBoard {got['delivered'] * 1000:,.0f} ms; "
                  f"steps already tracked skipped: {got['already_tracked']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
