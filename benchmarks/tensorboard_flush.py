"""Cost of TensorBoard's flush at every write in the delivery process (``trackers/tensorboard.py``: its cursor is what
the events file holds, so a delivery process killed mid-run and started again resends nothing TensorBoard has).
Measured in process CPU time (the writer's own thread included), per delivered step of 30 scalars in the worst case of
one step per write, side by side with writes flushed only at the end, in interleaved pairs.

    python benchmarks/tensorboard_flush.py [--steps N] [--pairs N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from primus.tracking.trackers.tb_events import EventWriter

SCALARS = {f"metric/{i}": float(i) for i in range(30)}


def per_step_us(flush_each: bool, steps: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        writer = EventWriter(Path(folder), 1000)
        started = time.process_time()
        for step in range(steps):
            writer.add_step_scalars(SCALARS, step, time.time())
            if flush_each:
                writer.flush()
        writer.flush()
        cost = (time.process_time() - started) / steps * 1e6
        writer.close()
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--pairs", type=int, default=5)
    opts = parser.parse_args()
    print(f"process CPU per delivered step of {len(SCALARS)} scalars, {opts.pairs} interleaved pairs x {opts.steps}")
    print("| pair | flushed at the end (µs) | flushed at each write (µs) | extra (µs) |")
    print("|---|---|---|---|")
    extras = []
    for pair in range(1, opts.pairs + 1):
        once, each = per_step_us(False, opts.steps), per_step_us(True, opts.steps)
        extras.append(each - once)
        print(f"| {pair} | {once:.1f} | {each:.1f} | {each - once:.1f} |")
    print(f"tensorboard flush per write: median extra {statistics.median(extras):.1f} µs of the delivery process's CPU "
          f"per write (range {min(extras):.1f}-{max(extras):.1f})")


if __name__ == "__main__":
    main()
