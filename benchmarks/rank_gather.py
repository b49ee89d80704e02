"""Cost of the across-rank figures (mlflow_performance_metrics_across_ranks) per logged step, on every rank:
reading this rank's memory and utilisation, and the one gloo all_gather of them, side by side with the
smallest collective there is (an all_reduce of one float on the same group) as the baseline.

Two processes on this machine's CPU (gloo over loopback, as the 2-process CPU tests); on a GPU cluster the
gather crosses the network once per log step between hosts. Run:
``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/rank_gather.py [--steps N]`` (seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import free_port  # noqa: E402

from primus.tracking.across_ranks import GATHERED  # noqa: E402


def worker(rank: int, world: int, port: int, steps: int, out) -> None:
    import torch
    import torch.distributed as dist

    from primus.tracking.across_ranks import RankGather
    from primus.tracking.perf import Utilisation, memory_metrics

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    utilisation, gather = Utilisation(), RankGather()
    one = torch.zeros(1)
    reads, gathers, baseline = [], [], []
    for _ in range(steps):
        dist.barrier()  # the ranks arrive together, as they do at a log step after a training step
        t0 = time.perf_counter()
        own = memory_metrics() | utilisation.read()
        t1 = time.perf_counter()
        gather.gather(own)
        t2 = time.perf_counter()
        dist.barrier()
        t3 = time.perf_counter()
        dist.all_reduce(one)
        baseline.append(time.perf_counter() - t3)
        reads.append(t1 - t0)
        gathers.append(t2 - t1)
    if rank == 0:
        out.put((reads, gathers, baseline))
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    steps = parser.parse_args().steps
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=worker, args=(r, 2, port, steps, queue)) for r in range(2)]
    for p in procs:
        p.start()
    reads, gathers, baseline = queue.get(timeout=300)
    for p in procs:
        p.join(60)

    def us(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1e6:.0f} µs, p90 {sorted(xs)[int(len(xs) * 0.9)] * 1e6:.0f} µs"

    print(f"2 ranks, gloo on 127.0.0.1, {steps} log steps, rank 0's training thread:")
    print(f"read own memory + utilisation per logged step: {us(reads)}")
    print(f"all_gather of {len(GATHERED)} floats per logged step: {us(gathers)}")
    print(f"baseline all_reduce of 1 float: {us(baseline)}")
    print(f"gather / baseline ratio: {statistics.median(gathers) / statistics.median(baseline):.2f}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
