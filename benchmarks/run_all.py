"""`make bench`: run every benchmark under benchmarks/ and write benchmarks/RESULTS.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py [--quick] [--only NAME ...]

Each benchmark is a script here that prints its own figures, each a ratio against a baseline measured
side by side in the same run (hub_overhead: the hub vs upstream's writer patterns; *_tracking: step
time with tracking on vs off and vs upstream's own writers as interleaved pairs, process-tree CPU per 1,000
logged steps, and the training thread's CPU in our code per logged step; delivery_startup: the delivery
process's start-up CPU and peak RSS; prometheus_push: the delivery thread's CPU per push to a Pushgateway;
otlp_export: the delivery process's CPU per OTLP export; node_delivery: two ranks' delivery processes, peak RSS and
CPU, one per rank vs one per node; gpu_check: device synchronisations and step-time pairs on a GPU host, a line
saying there is none elsewhere; startup_overhead: start-up added by the
layer; steady_state: the whole process tree's CPU per logged step, start-up taken out (cgroup CPU accounting,
delivery process included); exit_flush: exit and flush time with a healthy and a dead server; soak: cost, memory and losses
over a long run; resume_cost: resuming against a long journal vs a fresh one). They run one after another
(each interleaves its own variants), and RESULTS.md gets the machine, every ratio line, and each
benchmark's full output, the issue-17 headline lines first. ``--quick`` runs each with fewer rounds/steps
(minutes instead of an hour); the full run soaks 200 000 steps (the 2 M-step soak is run by hand).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
QUICK_ARGS = {  # fewer rounds and steps, same variants and baselines
    "console_redaction": ["--lines", "500"],
    "delivery_startup": ["--runs", "1"],
    "exit_flush": ["--rounds", "2", "--cap", "60"],
    "gpu_check": ["--pairs", "2", "--steps", "20"],
    "hub_overhead": [],
    "maxtext_tracking": ["--rounds", "2", "--steps", "60"],
    "megatron_tracking": ["--rounds", "2", "--iters", "60"],  # past the trackers' start-up steps
    "node_delivery": ["--runs", "1"],
    "otlp_export": ["--exports", "100"],
    "prometheus_push": ["--pushes", "100", "--pairs", "2"],
    "resume_cost": ["--steps", "100000"],
    "soak": ["--steps", "20000", "--slice", "1000"],
    "startup_overhead": ["--runs", "7"],
    "steady_state": ["--rounds", "1", "--short", "10", "--long", "40"],
    "tensorboard_flush": ["--pairs", "2", "--steps", "200"],
    "torchtitan_tracking": ["--rounds", "2", "--steps", "20"],
}
# Full runs at the sizes each script defaults to, but the soak: its 2 M-step default takes hours here (run it by
# hand, as its docstring says); 200 000 steps still show whether cost or memory grows with the run's length.
FULL_ARGS = {"soak": ["--steps", "200000"]}
# The issue-17 figures, listed one per line at the top of RESULTS.md
HEADLINE = re.compile(r"^(megatron|torchtitan|maxtext): training-thread CPU per logged step|^delivery process start-up:"
                      r"|^megatron steady state:")
RATIO_LINE = re.compile(r"ratio|\s/\s|\bx\s?\d|per logged step|per 1,000 logged steps|per export|start-up:|gpu_check|^\|",
                        re.IGNORECASE)


@dataclass
class Outcome:
    name: str
    command: str
    seconds: float
    code: int
    output: str

    def ratio_lines(self) -> list[str]:
        return [line.strip() for line in self.output.splitlines() if RATIO_LINE.search(line)]


def benchmarks() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem != "run_all" and not p.stem.startswith("_"))


def run(name: str, quick: bool) -> Outcome:
    argv = [sys.executable, str(HERE / f"{name}.py"), *(QUICK_ARGS if quick else FULL_ARGS).get(name, [])]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    print(f"[bench] {name}: {' '.join(argv[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(argv, cwd=HERE.parent, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    print(f"[bench] {name}: exit {done.returncode} after {seconds:.0f} s", flush=True)
    output = done.stdout if done.returncode == 0 else done.stdout + "\n" + done.stderr[-4000:]
    return Outcome(name, " ".join(["python", *map(_relative, argv[1:])]), seconds, done.returncode, output)


def _relative(arg: str) -> str:
    return str(Path(arg).relative_to(HERE.parent)) if arg.startswith(str(HERE.parent)) else arg


def machine() -> list[str]:
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    memory = next((line.split(":", 1)[1].strip() for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal")), "unknown")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [f"- host: {platform.node()}, {platform.system()} {platform.release()}, Python {platform.python_version()}",
            f"- CPU: {cpu}, {os.cpu_count()} logical cores; memory {memory}; OMP_NUM_THREADS="
            f"{os.environ.get('OMP_NUM_THREADS', 'unset')}",
            f"- load average when the run started: {load} (other jobs on the machine slow every variant alike: "
            f"the ratios compare variants measured side by side)"]


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def write_results(outcomes: list[Outcome], header: list[str], quick: bool) -> None:
    lines = ["# Benchmark results", "",
             f"Written by `make bench` (benchmarks/run_all.py{' --quick' if quick else ''}) on "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Every figure is a ratio against a baseline measured "
             "in the same run; each benchmark's docstring says how.", "", "## Machine", "", *header, "",
             "## Headline figures", "", "```", *headline(outcomes), "```", "",
             "## Ratios", "", "| benchmark | exit | seconds | figures |", "|---|---|---|---|"]
    for o in outcomes:
        figures = "<br>".join(line.replace("|", "\\|") for line in o.ratio_lines()) or "(none printed)"
        lines.append(f"| {o.name} | {o.code} | {o.seconds:.0f} | {figures} |")
    for o in outcomes:
        lines += ["", f"## {o.name}", "", f"`{o.command}` (exit {o.code}, {o.seconds:.0f} s)", "", "```",
                  o.output.rstrip(), "```"]
    RESULTS.write_text("\n".join(lines) + "\n")


def headline(outcomes: list[Outcome]) -> list[str]:
    return [line.strip() for o in outcomes for line in o.output.splitlines() if HEADLINE.match(line.strip())]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and steps per benchmark")
    parser.add_argument("--only", nargs="*", choices=benchmarks(), help="run only these benchmarks")
    args = parser.parse_args()
    header = machine()
    outcomes = [run(name, args.quick) for name in (args.only or benchmarks())]
    write_results(outcomes, header, args.quick)
    print(f"[bench] wrote {RESULTS}")
    return 0 if all(o.code == 0 for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
