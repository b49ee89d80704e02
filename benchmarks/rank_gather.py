"""Cost of the ranks' log-step figures through the job's store (primus.tracking.measure.rank_channel), 2 to 256
ranks on this machine, flat (every rank to the job's store) and through simulated hosts of 8 ranks (a host's ranks to
its local rank 0's store, one block per host to the job's), side by side: per log step, the training thread's added
wall and CPU time on every rank (queueing its row: median and p99 over ranks and steps), the writing rank's channel
thread (CPU, and the wall from its own row to the step gathered), the hosts' local rank 0 threads' CPU, the job
store's load (the TCPStore server's process CPU and the operations it served; the hosts' stores' operations) and how
the rows arrived (steps complete, rows late, ranks missing).

The ranks are the real RankChannel, each with its own thread and its own TCPStore clients, as in a job; a process
that imports torch holds ~0.5 GB here, so they are threads in a few processes (``--processes``), each rank a stand-in
training loop that reaches its log steps at the same wall-clock times (as ranks released by a collective do) and
otherwise sleeps. The job's server runs in this process, as in a job's rank 0 (or torchrun's agent); a host's in the
process of its local rank 0. With one host (8 ranks or fewer) both ways are flat. Run:
``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/rank_gather.py [--ranks 2 8 32 128 256] [--steps N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.mlflow_server import free_port  # noqa: E402

ROW = 14  # floats per row: the memory, utilisation and power names (across_ranks.GATHERED), busy time and data wait
HOST_RANKS = 8  # ranks per simulated host


def ranks_in_process(
    first: int, count: int, world: int, port: int, steps: int, interval_s: float, hosts: bool, out
) -> None:
    import torch.distributed as dist

    from primus.tracking.measure.rank_channel import Node, RankChannel

    nodes = world // HOST_RANKS if hosts else 0

    def node(r: int) -> Node | None:
        return Node(r // HOST_RANKS, r % HOST_RANKS, HOST_RANKS, nodes) if nodes > 1 else None

    def client():
        return dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False, timeout=timedelta(seconds=30))

    gathered: list[tuple[int, float, int, int]] = []  # (step, seconds from the log step, missing, duplicates)

    def on_gathered(got) -> None:
        gathered.append((got.step, time.time() - (start + got.step * interval_s), len(got.missing), got.duplicates))

    channels = [
        RankChannel(
            client,
            r,
            world,
            on_gathered=on_gathered if r == 0 else None,
            namespace="bench",
            host=f"host-{r // HOST_RANKS}",
            node=node(r),
        )
        for r in range(first, first + count)
    ]
    for c in channels:  # a TCPStore client sometimes takes 5 s to connect here: the log steps start after
        c.connected.wait(120)
    connecting = sum(c.counts.store_ops for c in channels)  # once per process (a host's store told): not per step
    costs: list[tuple[float, float]] = []
    lock = threading.Lock()
    control = client()  # the benchmark's own: every process ready, then one start time for all
    control.add("bench/ready", count)
    start = float(control.get("bench/start"))

    def rank_loop(channel) -> None:
        mine = []
        for step in range(steps):
            time.sleep(max(0.0, start + step * interval_s - time.time()))  # the stand-in training steps
            w0, c0 = time.perf_counter(), time.thread_time()
            channel.publish(step, [float(step)] * ROW)  # what a rank's training thread adds at a log step
            mine.append((time.perf_counter() - w0, time.thread_time() - c0))
        with lock:
            costs.extend(mine)

    loops = [threading.Thread(target=rank_loop, args=(c,)) for c in channels]
    for t in loops:
        t.start()
    for t in loops:
        t.join()
    deadline = time.monotonic() + 30
    while first == 0 and len(gathered) < steps and time.monotonic() < deadline:
        time.sleep(0.01)
    if first == 0:
        control.set("bench/done", "1")
    # a closed channel stops waiting: a host's local rank 0 would send its last block without the rows still coming
    control.wait(["bench/done"], timedelta(seconds=60))
    for c in channels:
        c.close()
    writer = channels[0].counts if first == 0 else None
    counts = [c.counts for c in channels]
    ops = [sum(c.store_ops for c in counts) - connecting, sum(c.node_ops for c in counts)]
    leaders = [c.counts.busy_s for c in channels if nodes > 1 and c.rank % HOST_RANKS == 0 and c.rank > 0]
    out.put((costs, gathered, writer, ops, sum(c.late_rows for c in counts), leaders))


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def run(world: int, steps: int, processes: int, interval_s: float, hosts: bool) -> None:
    import torch.distributed as dist
    import torch.multiprocessing as mp

    port = free_port()
    server = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    processes = min(processes, world)
    share = [world // processes + (i < world % processes) for i in range(processes)]
    procs, first = [], 0
    for count in share:
        procs.append(
            ctx.Process(target=ranks_in_process, args=(first, count, world, port, steps, interval_s, hosts, queue))
        )
        first += count
    for p in procs:
        p.start()
    while server.add("bench/ready", 0) < world:
        time.sleep(0.05)
    server.set("bench/start", str(time.time() + 0.2))
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    results = [queue.get(timeout=300) for _ in procs]
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for p in procs:
        p.join(60)
    del server
    costs = [c for r in results for c in r[0]]
    [gathered] = [r[1] for r in results if r[2] is not None]
    [writer] = [r[2] for r in results if r[2] is not None]
    ops, node_ops = (sum(r[3][i] for r in results) for i in (0, 1))
    late = sum(r[4] for r in results)
    leaders = [busy / steps * 1e3 for r in results for busy in r[5]]
    store_cpu = (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) / steps
    wall, cpu = [c[0] * 1e6 for c in costs], [c[1] * 1e6 for c in costs]
    latency = [g[1] * 1e3 for g in gathered]
    layout = f"hosts of {HOST_RANKS}" if hosts and world // HOST_RANKS > 1 else "flat"
    print(
        f"{world:>4} ranks, {layout} ({processes} processes), {steps} log steps {interval_s:g} s apart:"
        f" training thread per rank per logged step: wall median {statistics.median(wall):.1f} µs,"
        f" p99 {percentile(wall, 0.99):.1f} µs; CPU median {statistics.median(cpu):.1f} µs,"
        f" p99 {percentile(cpu, 0.99):.1f} µs"
    )
    print(
        f"      writer's channel thread per logged step: CPU {writer.busy_s / steps * 1e3:.2f} ms,"
        f" gathered {statistics.median(latency):.0f} ms after the log step (max {max(latency):.0f});"
        + (f" hosts' local rank 0 threads: CPU median {statistics.median(leaders):.2f} ms;" if leaders else "")
        + f" job store: {store_cpu * 1e3:.1f} ms server CPU, {ops / steps:.0f} operations"
        + (f" (hosts' stores: {node_ops / steps:.0f});" if node_ops else ";")
        + f" steps complete {writer.complete}, incomplete {writer.incomplete},"
        f" ranks missing {sum(g[2] for g in gathered)}, late rows {late},"
        f" duplicates {sum(g[3] for g in gathered)}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8, 32, 128, 256])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between log steps")
    options = parser.parse_args()
    for world in options.ranks:
        for hosts in (False, True) if world // HOST_RANKS > 1 else (False,):
            run(world, options.steps, options.processes, options.interval, hosts)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
