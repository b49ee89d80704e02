"""Start-up and call overhead of Primus's activation, side by side with the unpatched baseline.

    .venv/bin/python benchmarks/startup_overhead.py [--runs 15] [--calls 200000]

Prints: the time `import primus` takes in a fresh interpreter (and `import primus.activation`, what
an activated process loads); `primus-run python -c pass` vs `python -c pass` (and the bare
per-child cost: `python -c pass` with the activation environment, what every torchrun worker pays);
the per-call cost of a guarded PatchHandle.wrap wrapper vs an unguarded wrapt wrapper vs a plain call.
Medians of interleaved runs, so load on the machine hits every variant alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import timeit
import types
from pathlib import Path

import wrapt

from primus.activation import activation_env
from primus.patches import Patch, PatchRegistry

PYTHON = sys.executable
PRIMUS_RUN = str(Path(PYTHON).parent / "primus-run")


def wall_seconds(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return float(subprocess.run([PYTHON, "-c", code], check=True, capture_output=True, text=True).stdout)


def medians(variants: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):  # interleaved
        for name, (command, env) in variants.items():
            samples[name].append(wall_seconds(command, env))
    return {name: statistics.median(values) for name, values in samples.items()}


def call_overhead(calls: int) -> dict[str, float]:
    """ns per call of f(1) plain, under a bare wrapt wrapper, and under a guarded registry wrapper."""

    def f(x):
        return x

    def passthrough(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    module = types.ModuleType("primus_bench_target")
    module.f = f
    sys.modules[module.__name__] = module
    registry = PatchRegistry()
    registry.register(Patch("bench.passthrough", module.__name__, None, "",
                            lambda mod, handle: handle.wrap(mod, "f", passthrough)))
    registry.activate(only=["bench.passthrough"])
    guarded = module.f
    bare = wrapt.FunctionWrapper(f, passthrough)
    try:
        return {name: min(timeit.repeat("fn(1)", globals={"fn": fn}, number=calls, repeat=5)) / calls * 1e9
                for name, fn in (("plain", f), ("wrapt", bare), ("guarded", guarded))}
    finally:
        registry.deactivate()
        del sys.modules[module.__name__]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()

    base = {k: v for k, v in os.environ.items() if not k.startswith("PRIMUS_")}
    for module in ("primus", "primus.activation"):
        times = [import_seconds(module) for _ in range(args.runs)]
        print(f"import {module:<20} {statistics.median(times) * 1e3:7.1f} ms  (median of {args.runs}, fresh "
              f"interpreter)")

    results = medians({
        "python -c pass": ([PYTHON, "-c", "pass"], base),
        "primus-run python -c pass": ([PRIMUS_RUN, PYTHON, "-c", "pass"], base),
        "activated child (bootstrap only)": ([PYTHON, "-c", "pass"], activation_env(base)),
    }, args.runs)
    baseline = results["python -c pass"]
    print(f"\nstart-up, median of {args.runs} interleaved runs")
    for name, seconds in results.items():
        extra_ms = (seconds - baseline) * 1e3
        print(f"  {name:<34} {seconds * 1e3:7.1f} ms  x{seconds / baseline:5.2f}  (+{extra_ms:.1f} ms)")

    per_call = call_overhead(args.calls)
    print(f"\ncall overhead, best of 5 x {args.calls} calls of f(1)")
    for name, ns in per_call.items():
        print(f"  {name:<34} {ns:7.0f} ns  (+{ns - per_call['plain']:.0f} ns)")


if __name__ == "__main__":
    main()
