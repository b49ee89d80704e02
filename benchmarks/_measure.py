"""Shared by the benchmarks: CPU figures, which noise on a shared box barely moves, and wall-time ratios of
interleaved pairs with the uncertainty that noise leaves in them.

* ``run_measured`` runs one command to its end and returns its output with (1) the CPU of its whole process
  tree: the trainer, torchrun's workers, the delivery process and wandb's service, which outlives the process
  that started it (this process becomes a child subreaper, so orphans are re-parented here and reaped, with
  their CPU); (2) the CPU accounting (``_cpu_accounting/``, on for the run: this folder on its PYTHONPATH wraps
  Primus's entry points from outside): the training thread's CPU inside our hooks and the hub, and the delivery
  process's start-up CPU and peak RSS.
  One measured command at a time: the tree CPU is this process's children's CPU before and after.
* ``pair_ratios`` turns (baseline, variant) pairs measured side by side into the per-pair ratios, their median
  and a bootstrap 90 % interval of the median; when the interval holds 1 the verdict is "not distinguishable
  from 1" rather than a ratio.
"""

from __future__ import annotations

import ctypes
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

ACCOUNTING_SITE = Path(__file__).resolve().parent / "_cpu_accounting"
sys.path.append(str(ACCOUNTING_SITE))

from cpu_accounting import ENV as ACCOUNTING_ENV  # noqa: E402
from cpu_accounting import read as read_accounts  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
ORPHANS_WAIT_S = 60.0  # wandb's service ends shortly after the process that started it
MIN_PAIRS = 5
BOOTSTRAP_SAMPLES = 4000


@dataclass
class Measured:
    output: str
    returncode: int
    tree_cpu_s: float  # user + system CPU of the command and every process it started
    accounts: list[dict]  # the CPU accounting's dumps, one per process that imported primus

    def entries(self) -> dict[str, list[int]]:
        """Our entry points' [calls, ns of thread CPU], over the trainer's processes and threads."""
        out: dict[str, list[int]] = {}
        for account in self.accounts:
            for thread in account["threads"].values():
                for entry, (calls, ns) in thread["entries"].items():
                    total = out.setdefault(entry, [0, 0])
                    total[0] += calls
                    total[1] += ns
        return out

    def each_call_ns(self, entry: str) -> list[int]:
        """The thread CPU of each call of ``entry``, in call order per thread."""
        return [ns for account in self.accounts for thread in account["threads"].values()
                for ns in thread.get("each", {}).get(entry, [])]

    @property
    def delivery(self) -> list[dict]:
        """The delivery processes' dumps: startup_cpu_s, startup_rss_mib, process_cpu_s, peak_rss_mib."""
        return [a for a in self.accounts if "startup_cpu_s" in a]


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_orphans(keep: Collection[int] = ()) -> None:
    """Wait for the processes re-parented here (wandb's service) so their CPU is counted; ``keep``: children
    of the benchmark itself (an MLflow server), which are no orphans."""
    orphans = [p for p in psutil.Process().children() if p.pid not in keep]
    _, alive = psutil.wait_procs(orphans, timeout=ORPHANS_WAIT_S)
    for p in alive:  # still running a minute after the run ended: stop it, its CPU counts all the same
        p.kill()
    psutil.wait_procs(alive, timeout=10)


def run_measured(command: Sequence[str], env: dict[str, str], cwd: Path | str | None = None,
                 keep: Collection[int] = ()) -> Measured:
    become_subreaper()
    reap_orphans(keep)  # an earlier unmeasured run's, not this one's
    with tempfile.TemporaryDirectory(prefix="primus-cpu-") as accounts:
        before = children_cpu_s()
        done = subprocess.run(list(command), env=accounting_env(env, accounts), cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reap_orphans(keep)
        return Measured(done.stdout, done.returncode, children_cpu_s() - before, read_accounts(Path(accounts)))


def accounting_env(env: Mapping[str, str], accounts: str) -> dict[str, str]:
    """``env`` with the CPU accounting on, its dumps to ``accounts``: its folder first on PYTHONPATH."""
    existing = env.get("PYTHONPATH")  # its empty entries stay (the working directory); unset adds none
    path = [str(ACCOUNTING_SITE), *(existing.split(os.pathsep) if existing else [])]
    return {**env, ACCOUNTING_ENV: accounts, "PYTHONPATH": os.pathsep.join(path)}


def median_interval(values: Sequence[float], level: float = 0.90) -> tuple[float, float]:
    """Bootstrap interval of the median (seeded: the same pairs print the same interval)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP_SAMPLES))
    tail = (1 - level) / 2
    return medians[int(tail * len(medians))], medians[int((1 - tail) * len(medians)) - 1]


def pair_ratios(label: str, pairs: Sequence[tuple[float, float]]) -> str:
    """One line: ``label`` (variant / baseline) over pairs measured side by side, as ``(baseline, variant)``."""
    ratios = [variant / baseline for baseline, variant in pairs]
    each = ", ".join(f"{r:.3f}" for r in ratios)
    median = statistics.median(ratios)
    if len(ratios) < MIN_PAIRS:
        return f"ratio {label}: median {median:.3f} of {len(ratios)} pairs ({each}); no interval under {MIN_PAIRS} pairs"
    low, high = median_interval(ratios)
    verdict = "not distinguishable from 1" if low <= 1 <= high else f"{median:.3f}"
    return (f"ratio {label}: {verdict} (median {median:.3f}, bootstrap 90 % interval {low:.3f}-{high:.3f}, "
            f"{len(ratios)} pairs: {each})")


def tree_cpu_line(backend: str, runs: Mapping[str, Sequence[Measured]], logged_steps: int) -> str:
    """One line: each variant's whole-process-tree CPU per 1,000 logged steps (median over its runs)."""
    per = {name: statistics.median(m.tree_cpu_s for m in measured) / logged_steps * 1000
           for name, measured in runs.items()}
    return (f"{backend}: process-tree CPU per 1,000 logged steps ({logged_steps}-step runs, start-up included): "
            + ", ".join(f"{name} {cpu:.0f} s" for name, cpu in per.items()))


def training_thread_lines(backend: str, runs: Sequence[Measured], step_entry: str, logged_steps: int) -> str:
    """The training thread's CPU in our code per logged step: in the hook upstream calls once per logged step
    (``step_entry``, with everything of ours it calls), median over ``runs``; and the rest (the run's start and
    end), which a long run spreads over many steps. A call's median shows the steady step without the one-offs
    (first-step set-up) that a short run's mean carries. The last line is the one `make bench` reports."""
    def per_step_us(m: Measured) -> float:
        return m.entries().get(step_entry, [0, 0])[1] / logged_steps / 1e3

    def one_off_ms(m: Measured) -> float:
        return sum(ns for entry, (_, ns) in m.entries().items() if entry != step_entry) / 1e6

    per_step = statistics.median(per_step_us(m) for m in runs)
    each = [ns for m in runs for ns in m.each_call_ns(step_entry)] or [0]
    detail = ", ".join(f"{entry} {calls} calls {ns / 1e6:.1f} ms" for entry, (calls, ns) in runs[-1].entries().items())
    return (f"{backend} training thread, our code: {per_step:.1f} µs per logged step in {step_entry}, median of "
            f"{len(runs)} runs of {logged_steps} logged steps (one call: median {statistics.median(each) / 1e3:.1f} µs, "
            f"first {each[0] / 1e3:.0f} µs, largest {max(each) / 1e3:.0f} µs); start and end {statistics.median(map(one_off_ms, runs)):.1f} "
            f"ms once per run (last run: {detail})\n"
            f"{backend}: training-thread CPU per logged step {per_step:.0f} µs")
