"""The CPU of a command's whole process tree, detached processes included (the delivery process, wandb's service),
by cgroup CPU accounting: the command starts inside a transient cgroup of its own, every process it starts is born
there and stays there however it detaches, and the cgroup's counter holds their CPU once the last has left.

cgroup v2 (``cpu.stat``'s ``usage_usec`` in a child of this process's own cgroup) or v1 (``cpuacct.usage`` under
the cpuacct hierarchy); both need a writable hierarchy (root, or a delegated subtree). Where neither is writable,
``available()`` says why and the caller falls back to ``_measure.run_measured``'s sum: this process becomes a child
subreaper, so orphans are re-parented here and their CPU reaches RUSAGE_CHILDREN when they are reaped."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

V2_ROOT = Path("/sys/fs/cgroup")
V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
EMPTY_WAIT_S = 60.0  # wandb's service ends shortly after the process that started it


class CgroupCpu:
    """One transient cgroup; ``run`` a command in it and get the CPU seconds of everything it started."""

    def __init__(self, parent: Path, counter: str):
        self.method = "cgroup v2 cpu.stat" if counter == "cpu.stat" else "cgroup v1 cpuacct.usage"
        self._parent = parent
        self._counter = counter

    def run(self, command: Sequence[str], env: dict[str, str], cwd: Path | str | None = None) -> tuple[int, str, float]:
        """(exit code, output, CPU seconds of the tree) of ``command``, after every process it started has ended."""
        group = self._parent / f"primus-bench-{os.getpid()}-{time.monotonic_ns()}"
        group.mkdir()
        try:
            procs = str(group / "cgroup.procs")

            def join() -> None:  # in the child, before exec: everything it starts is born in the group
                with open(procs, "w") as f:
                    f.write(str(os.getpid()))

            done = subprocess.run(list(command), env=env, cwd=cwd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, preexec_fn=join)
            _wait_empty(group)
            return done.returncode, done.stdout, self._cpu_s(group)
        finally:
            _wait_empty(group, kill=True)
            group.rmdir()

    def _cpu_s(self, group: Path) -> float:
        text = (group / self._counter).read_text()
        if self._counter == "cpu.stat":
            return next(int(line.split()[1]) for line in text.splitlines() if line.startswith("usage_usec")) / 1e6
        return int(text) / 1e9


def _members(group: Path) -> list[int]:
    return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]


def _wait_empty(group: Path, kill: bool = False) -> None:
    deadline = time.monotonic() + (0 if kill else EMPTY_WAIT_S)
    while _members(group) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in _members(group):  # still running a minute after the run ended: stop it, its CPU counts all the same
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    while _members(group):
        time.sleep(0.05)


def available() -> tuple[CgroupCpu | None, str]:
    """A usable cgroup hierarchy, or None and why not."""
    own = _own_v2_group()
    if own is not None and (own / "cgroup.subtree_control").exists() and os.access(own, os.W_OK):
        return CgroupCpu(own, "cpu.stat"), ""
    if (V1_CPUACCT / "cpuacct.usage").exists() and os.access(V1_CPUACCT, os.W_OK):
        return CgroupCpu(V1_CPUACCT, "cpuacct.usage"), ""
    return None, "no writable cgroup hierarchy (v2 group of this process or v1 cpuacct)"


def _own_v2_group() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    path = next((line.split(":", 2)[2] for line in lines if line.startswith("0::")), None)
    if path is None or not (V2_ROOT / "cgroup.controllers").exists():
        return None  # a v1 host: its 0:: line names no v2 hierarchy with controllers
    return V2_ROOT / path.lstrip("/")
