"""Cost of the log step's gather over ranks per logged step, on every rank: the straggler figures alone
(``primus_stragglers``: this rank's busy time, one gloo all_gather of it, the summary) and the across-rank figures
(``mlflow_performance_metrics_across_ranks``: memory and utilisation read, then gathered), each in a pair with the
smallest collective there is (an all_reduce of one float on the same group) as the baseline, the pair's two halves
interleaved so that load on the machine falls on both alike. Wall time and the training thread's CPU time, median
and spread (10th-90th percentile) over the log steps, as rank 0 sees them; and the cost of the wrapper that times
collective waits, per wait, in one process.

N processes on this machine's CPU (gloo over loopback, as the multi-process CPU tests); on a GPU cluster the
gather crosses the network once per log step between hosts. Run:
``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/rank_gather.py [--ranks 2 4 8] [--steps N]``.
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

KINDS = ("stragglers", "figures")


def worker(rank: int, world: int, port: int, steps: int, out) -> None:
    import torch
    import torch.distributed as dist

    from primus.tracking.measure.across_ranks import RankFigures

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    gathers = {"stragglers": RankFigures(figures=False, stragglers=True), "figures": RankFigures()}
    one = torch.zeros(1)
    cost: dict[str, list[tuple[float, float]]] = {k: [] for k in (*KINDS, "baseline")}

    def timed(key: str, call) -> None:
        dist.barrier()  # the ranks arrive together, as they do at a log step after a training step
        w0, c0 = time.perf_counter(), time.thread_time()
        call()
        cost[key].append((time.perf_counter() - w0, time.thread_time() - c0))

    for kind in KINDS:
        gathers[kind].read()  # the first log step: starts the clock, gathers the host names
    for step in range(steps):
        for kind in KINDS if step % 2 else KINDS[::-1]:
            timed(kind, gathers[kind].read)
            timed("baseline", lambda: dist.all_reduce(one))
    if rank == 0:
        out.put(cost)
    dist.destroy_process_group()


def wait_wrapper_cost(calls: int = 20000) -> float:
    """Seconds the wrapper adds to one Work.wait: a finished work's wait, timed with and without the clock."""
    import torch
    import torch.distributed as dist

    from primus.tracking.measure.stragglers import BusyClock

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    work = dist.all_reduce(torch.zeros(1), async_op=True)
    work.wait()

    def per_wait() -> float:
        started = time.perf_counter()
        for _ in range(calls):
            work.wait()
        return (time.perf_counter() - started) / calls

    bare = per_wait()
    clock = BusyClock()
    timed = per_wait()
    clock.close()
    dist.destroy_process_group()
    return timed - bare


def spread(xs: list[float]) -> str:
    xs = sorted(xs)
    at = lambda q: xs[min(len(xs) - 1, int(len(xs) * q))] * 1e6  # noqa: E731
    return f"{statistics.median(xs) * 1e6:7.0f} µs ({at(0.1):.0f}-{at(0.9):.0f})"


def run(world: int, steps: int) -> None:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=worker, args=(r, world, port, steps, queue)) for r in range(world)]
    for p in procs:
        p.start()
    cost = queue.get(timeout=600)
    for p in procs:
        p.join(60)
    print(f"{world} ranks, gloo on 127.0.0.1, {steps} log steps, rank 0's training thread, median (p10-p90):")
    for key in (*KINDS, "baseline"):
        wall, cpu = [c[0] for c in cost[key]], [c[1] for c in cost[key]]
        print(f"  {key:<11} wall {spread(wall)}   cpu {spread(cpu)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--steps", type=int, default=300)
    options = parser.parse_args()
    for world in options.ranks:
        run(world, options.steps)
    print(f"wrapper on Work.wait: {wait_wrapper_cost() * 1e6:.2f} µs per wait (the training thread's, every step)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
