"""Stacks of a hung run: every thread's Python stack of each rank on the node, in ``<run_dir>/stacks/``.

A rank calls ``register_for_stacks`` at start-up: it opens ``stacks/<host>-<pid>.txt`` (its header names the
process, so a reused pid is never signalled) and has ``faulthandler`` write every thread's stack there on
``STACK_SIGNAL``; at its end (``release_stacks``, or at exit) a file that holds no stacks is removed. faulthandler's handler is C code that runs at once, without the GIL: it works while the
rank's main thread is blocked in a collective or any other C call. At a ``stalled`` alert the delivery process
(``health_watch.py``) calls ``dump_stacks``: it appends a line saying why to each file of a live rank on its own
host and signals that rank. The files are uploaded with the logs (``mlflow_upload_logs``).

A rank on another node is another host's delivery process's to signal: it gets its stacks saved when that node
delivers a run of its own (TorchTitan's runs on every rank). Where only one rank writes the run (Megatron's
last rank, MaxText's first), the other nodes have no delivery process, and their ranks' files stay empty: a
process can only be signalled from its own node.
"""

from __future__ import annotations

import atexit
import faulthandler
import logging
import os
import re
import signal
import socket
import time
from pathlib import Path
from typing import TextIO

import psutil

from primus.tracking.run_layout import STACKS_DIR

log = logging.getLogger("primus.tracking")

# SIGUSR1 is Slurm's and Lightning's usual pre-emption notice. A program that sets its own SIGUSR2 handler before
# registering keeps it (no stacks then); one that sets it after gets a stall's signal in its handler.
STACK_SIGNAL = signal.SIGUSR2
_HEADER = re.compile(r"# primus: stacks of pid (?P<pid>\d+) on (?P<host>\S+), started (?P<created>[\d.]+)")
_registered: dict[Path, TextIO] = {}  # kept open for faulthandler until released


def stacks_file(run_dir: Path, host: str, pid: int) -> Path:
    return run_dir / STACKS_DIR / f"{host}-{pid}.txt"


def register_for_stacks(run_dir: Path) -> Path | None:
    """Have this process's stacks written to the run's ``stacks/`` on ``STACK_SIGNAL``. Leaves a signal the
    program handles itself alone (returns None then)."""
    if signal.getsignal(STACK_SIGNAL) not in (signal.SIG_DFL, None):
        log.info("primus tracking: %s has a handler already: no stacks on a stall", STACK_SIGNAL.name)
        return None
    host, pid = socket.gethostname(), os.getpid()
    path = stacks_file(run_dir, host, pid)
    path.parent.mkdir(parents=True, exist_ok=True)
    file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - faulthandler writes to it until the process ends
    file.write(f"# primus: stacks of pid {pid} on {host}, started {psutil.Process(pid).create_time():.2f}\n")
    file.flush()
    faulthandler.register(STACK_SIGNAL, file=file, all_threads=True, chain=False)
    _registered[path] = file
    atexit.register(release_stacks, path)
    return path


def release_stacks(path: Path) -> None:
    """No more stacks on the signal; the file goes unless it holds a dump (so only a stall's stacks are uploaded)."""
    file = _registered.pop(path, None)
    if file is None:
        return
    faulthandler.unregister(STACK_SIGNAL)
    file.close()
    try:
        with open(path, encoding="utf-8") as f:
            dumped = len(f.readlines()) > 1
        if not dumped:
            path.unlink()
            path.parent.rmdir()  # the last rank's: no stacks/ folder in a run that never stalled
    except OSError:  # another rank's file is still there, or it is gone
        pass


def dump_stacks(run_dir: Path, why: str) -> list[int]:
    """Signal every live rank of this host registered in the run directory; returns their pids."""
    host = socket.gethostname()
    signalled = []
    for path in sorted((run_dir / STACKS_DIR).glob(f"{host}-*.txt")):
        pid = _live_pid(path, host)
        if pid is None:
            continue
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {why}\n")
        try:
            os.kill(pid, STACK_SIGNAL)
            signalled.append(pid)
        except OSError:  # gone meanwhile, or not ours
            continue
    return signalled


def _live_pid(path: Path, host: str) -> int | None:
    """The pid the file belongs to when that very process still runs (not another that got its pid)."""
    try:
        with open(path, encoding="utf-8") as f:
            match = _HEADER.match(f.readline())
        if match is None or match["host"] != host:
            return None
        pid = int(match["pid"])
        if abs(psutil.Process(pid).create_time() - float(match["created"])) > 0.01:
            return None
    except (OSError, psutil.Error):
        return None
    return pid
