"""The delivery process's CPU per OTLP export: the OTLP sink's ``write`` (protobuf request built from
opentelemetry-proto's messages, serialised, POSTed over HTTP with urllib) against a real OTLP/HTTP endpoint
(tests/support/otlp_receiver.py, another thread: its CPU is not counted), as its worker calls it.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/otlp_export.py [--exports 300]

Prints the sink thread's CPU (``time.thread_time``) per export, median and p90, for one log step of 30 figures
(the steady state: one export per delivered log step) and for a batch of 100 steps (a backfill after an outage),
the part of it that is building and serialising the request, and the same batches gzipped
(OTEL_EXPORTER_OTLP_COMPRESSION=gzip) with the bytes posted either way, measured side by side.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.otlp_receiver import OtlpReceiver  # noqa: E402

from primus.tracking.journal.records import METRICS, Record  # noqa: E402
from primus.tracking.journal.run_state import RunState  # noqa: E402
from primus.tracking.settings.config import TrackingConfig  # noqa: E402
from primus.tracking.trackers.context import SinkContext  # noqa: E402
from primus.tracking.trackers.otlp import OtlpSink  # noqa: E402

FIGURES = 30


def records(steps: int, first: int) -> list[Record]:
    now_ms = int(time.time() * 1000)
    return [
        Record(METRICS, step, now_ms + step, {f"group/figure_{i:02d}": step + i / 100 for i in range(FIGURES)}, step)
        for step in range(first, first + steps)
    ]


def opened_sink(run_dir: Path, compression: str) -> OtlpSink:
    cfg = TrackingConfig(run_dir=run_dir).resolve({**os.environ, "OTEL_EXPORTER_OTLP_COMPRESSION": compression})
    sink = OtlpSink(SinkContext("otlp", cfg.run_dir, "bench", "bench", {}, {}, RunState(cfg.run_dir), cfg))
    sink.open()
    return sink


def cpu_us(call, batches) -> list[float]:
    costs = []
    for batch in batches:
        t = time.thread_time()
        call(batch)
        costs.append((time.thread_time() - t) * 1e6)
    return costs


def line(what: str, costs: list[float]) -> str:
    ordered = sorted(costs)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"otlp export, {what}: sink-thread CPU per export median {statistics.median(costs):.0f} µs, p90 {p90:.0f} µs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exports", type=int, default=300)
    args = parser.parse_args()
    with OtlpReceiver() as receiver, tempfile.TemporaryDirectory(prefix="otlp-bench-") as tmp:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
        sink = opened_sink(Path(tmp), compression="none")
        gzipped = opened_sink(Path(tmp), compression="gzip")
        build = sink._protobuf

        def body(batch: list[Record]) -> bytes:  # the request alone, as write() builds it
            points = [(build.metric_name(k), r.ts_ms * 10**6, r.step, v) for r in batch for k, v in r.data.items()]
            return build.metrics_request(sink.resource, points).SerializeToString()

        one_step = [records(1, n) for n in range(args.exports)]
        backfill = [records(100, n * 100) for n in range(max(args.exports // 10, 5))]
        sink.write(one_step[0])  # the first request opens urllib's machinery
        for what, batches in (("1 step x 30 figures", one_step), ("100 steps x 30 figures", backfill)):
            sent = cpu_us(sink.write, batches)
            built = cpu_us(body, batches)
            zipped = cpu_us(gzipped.write, batches)
            print(line(what, sent))
            print(line(f"{what}, building and serialising only", built))
            print(line(f"{what}, gzipped", zipped))
        plain = body(backfill[0])
        print(
            f"otlp export, 100 steps x 30 figures: {len(plain)} bytes per export, {len(gzip.compress(plain, 1))} gzipped"
        )
        print(f"otlp export: {len(receiver.points())} points received, {receiver.received.refused} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
