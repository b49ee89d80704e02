"""Cost of the Prometheus sink in the delivery process (``trackers/prometheus.py``): CPU of its worker thread per
push of a logged step of 30 scalars to a real Pushgateway (Debian's ``prometheus-pushgateway``, started here on a
free port), the figures folded and the group PUT, one step per write (the worst case: at most one push per second
by default). Side by side, in interleaved pairs, with prometheus_client's own default handler, which builds an
opener, and so an SSL context with the CA store, at every push.

    python benchmarks/prometheus_push.py [--pushes N] [--pairs N]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.exposition import default_handler

from primus.tracking import PrometheusConfig, TrackingConfig
from primus.tracking.journal.records import METRICS, Record
from primus.tracking.journal.run_state import RunState
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers import prometheus
from primus.tracking.trackers.registry import build_sinks

SCALARS = {f"metric/{i}": float(i) for i in range(30)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    gateway = subprocess.Popen(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
                                "--persistence.file=", "--log.level=warn"])
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1):
                return gateway, url
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the Pushgateway did not start")


def per_push_us(url: str, folder: Path, pushes: int, reused: bool) -> float:
    cfg = TrackingConfig(run_dir=folder / f"run-{reused}", experiment_name="bench", run_name=f"push-{reused}",
                         prometheus=PrometheusConfig(url)).resolve({})
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    [sink] = build_sinks(["prometheus"], cfg, RunMeta.build(cfg), RunState(cfg.run_dir))
    original = prometheus.ReusedOpener
    if not reused:
        prometheus.ReusedOpener = lambda: default_handler  # type: ignore[misc,assignment]
    try:
        sink.open()
        started = time.thread_time()
        for step in range(1, pushes + 1):
            sink.write([Record(METRICS, step, int(time.time() * 1000), {**SCALARS, "lm loss": 1.0 / step}, end=0)])
        return (time.thread_time() - started) / pushes * 1e6
    finally:
        prometheus.ReusedOpener = original  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushes", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        gateway, url = start_gateway(Path(folder))
        try:
            print(f"delivery thread CPU per push of {len(SCALARS) + 1} scalars, {opts.pairs} interleaved pairs x "
                  f"{opts.pushes} pushes")
            print("| pair | Primus's sink (µs) | with prometheus_client's default handler (µs) |")
            print("|---|---|---|")
            ours, theirs = [], []
            for pair in range(1, opts.pairs + 1):
                ours.append(per_push_us(url, Path(folder), opts.pushes, reused=True))
                theirs.append(per_push_us(url, Path(folder), opts.pushes, reused=False))
                print(f"| {pair} | {ours[-1]:.0f} | {theirs[-1]:.0f} |")
        finally:
            gateway.terminate()
            gateway.wait(10)
    print(f"prometheus push: median {statistics.median(ours):.0f} µs of the delivery process's CPU per push "
          f"(range {min(ours):.0f}-{max(ours):.0f}); {statistics.median(theirs):.0f} µs with prometheus_client's "
          f"default handler")


if __name__ == "__main__":
    main()
