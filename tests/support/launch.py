"""Start a tiny real training as a subprocess, as every end-to-end test does: the test's environment minus
what a run must choose for itself (rendezvous, patch selection, the experiment, the Python path, the JAX
platform), one CPU thread and no accelerator, its whole output captured to a file, in a session of its own
so a timeout kills the whole process group (torchrun and its workers, MaxText's helpers)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from primus.tracking.delivery.process import CHILD_MODULE

NOT_INHERITED = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                 "PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES", "PRIMUS_PLATFORM", "PRIMUS_ACTIVATE", "PRIMUS_CONFIG",
                 "PRIMUS_CONFIG_OVERRIDES", "PRIMUS_RUN_DIR", "PRIMUS_WORKSPACE", "PYTHONPATH", "JAX_PLATFORMS")
# 12x faster steps on 2 cores; a process that dies of a fatal signal (SIGABRT, SIGSEGV) prints its threads' stacks
CPU_ENV = {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
# where a process's own account of its death starts, however early in the log
CRASH_MARKERS = ("Fatal Python error", "terminate called", "Traceback (most recent call last)")
CRASH_LINES = 40
# what a run that checks every step in every tracker waits at exit (the exit deadline itself is tests/reliability's
# subject): two cores carry a test session's trainings, their delivery processes and the MLflow server, and a
# tracker that gets its last steps after the default 30 s would fail a run that only waited too little
EVERY_STEP_EXIT_DEADLINE_S = 180
# a run's own words for a tracker that did not get everything: the exit report (tracking/run.py) and a tracker
# turned off for the run (tracking/delivery/worker.py)
SHORTFALL_MARKERS = ("did not receive everything", "did not receive the run's last figures", "is off for this run")


@dataclass(frozen=True)
class FinishedRun:
    """A run that ended: its exit code (None: killed at its timeout), its captured output, how long it took."""
    returncode: int | None
    log_path: Path
    seconds: float

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def explain(self, lines: int = 60) -> str:
        """For assertion messages: where the log is, the first crash it records if before its end (a rank's abort
        is followed by the launcher's own traceback), and how it ends."""
        output = self.output.splitlines()
        head = f"exit code {self.returncode} after {self.seconds:.1f} s; log {self.log_path}"
        crash = first_crash(output[:-lines])
        if crash is not None:
            head += f"; first crash:\n{crash}"
        return f"{head}; last lines:\n" + "\n".join(output[-lines:])


def tracker_shortfalls(output: str) -> list[str]:
    """The lines in which a run says a tracker did not get everything it logged (none: every tracker did)."""
    return [line for line in output.splitlines() if any(marker in line for marker in SHORTFALL_MARKERS)]


def first_crash(lines: Sequence[str]) -> str | None:
    """The lines from the first that starts a process's account of its death, if any."""
    first = next((i for i, line in enumerate(lines) if any(m in line for m in CRASH_MARKERS)), None)
    return None if first is None else "\n".join(lines[first : first + CRASH_LINES]) + "\n[...]"


def other_ranks_to_files(nproc: int, log_dir: Path) -> list[str]:
    """torchrun's options that write the output of every local rank but 0 to files under ``log_dir`` (rank 0's
    stays on the console, unprefixed), so a rank that dies says why somewhere (``rank_crashes``)."""
    if nproc < 2:
        return []
    return ["--log-dir", str(log_dir), "--redirects", ",".join(f"{r}:3" for r in range(1, nproc))]


def rank_crashes(log_dir: Path) -> str:
    """The first crash in each rank's stderr file under ``log_dir`` (``other_ranks_to_files``)."""
    found = []
    for path in sorted(log_dir.glob("*/attempt_*/*/stderr.log")):
        crash = first_crash(path.read_text(errors="replace").splitlines())
        if crash is not None:
            found.append(f"{path}:\n{crash}")
    return "\n".join(found)


def run_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a run starts with: the inherited part, then CPU_ENV, then the test's own ``env``."""
    return {**{k: v for k, v in os.environ.items() if k not in NOT_INHERITED}, **CPU_ENV, **(env or {})}


def start(command: Sequence[str], cwd: Path, log_path: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """``command`` running in ``cwd`` with stdout and stderr in ``log_path``; not waited for."""
    with open(log_path, "w") as log:
        return subprocess.Popen(list(command), cwd=cwd, env=run_env(env), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_or_kill(process: subprocess.Popen, timeout: float) -> int | None:
    """The exit code; None when ``timeout`` passed first and the process group was killed."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


def torchrun_workers(launcher_pid: int) -> dict[int, psutil.Process]:
    """torchrun's worker processes by the RANK torchrun gave each: its own children (theirs, such as data loader
    workers or a delivery process, inherit a worker's command line and RANK)."""
    workers = {}
    for process in psutil.Process(launcher_pid).children():
        try:
            workers[int(process.environ()["RANK"])] = process
        except (psutil.NoSuchProcess, KeyError):
            continue
    return workers


def kill_torchrun(launcher: subprocess.Popen) -> None:
    """A torchrun left running by a failed test: its workers (each in a session of its own, so the launcher's
    process group does not reach them, and perhaps stopped) and their children go with it."""
    if launcher.poll() is not None:
        return
    doomed = [p for w in torchrun_workers(launcher.pid).values() for p in (w, *w.children(recursive=True))]
    for process in doomed:
        try:
            process.resume()
            process.kill()
        except psutil.NoSuchProcess:
            continue
    wait_or_kill(launcher, 0)


def delivery_processes(parent: psutil.Process) -> dict[int, psutil.Process]:
    """``parent``'s delivery processes still alive, found as a user would with ``ps``: its children running the
    delivery module (a killed one is a zombie until it is reaped, and is left out)."""
    found = {}
    for child in parent.children():
        try:
            if CHILD_MODULE in " ".join(child.cmdline()):
                found[child.pid] = child
        except psutil.Error:  # a zombie, or gone
            pass
    return found
