"""Stacks of a hung run: every thread's Python stack of each rank on the node, in ``<run_dir>/stacks/``.

A rank calls ``register_for_stacks`` at start-up: a daemon thread waits in a read of a FIFO of its own in the node's
private folder (no GIL held, no CPU used). At a ``stalled`` alert the health watch calls ``dump_stacks``, which writes
a byte into each live rank's FIFO; the rank's thread wakes, takes the GIL and appends every other thread's stack. No
signal is used (``faulthandler``'s crashed ranks). docs/tracking-internals.md#stacks-of-a-hung-run says more.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import logging
import os
import re
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

import psutil

from primus.tracking.journal import files
from primus.tracking.journal.files import STACKS_DIR
from primus.tracking.journal.followers import Follower

log = logging.getLogger("primus.tracking")

_HEADER = re.compile(r"# primus: stacks of pid (?P<pid>\d+) on (?P<host>\S+), started (?P<created>[\d.]+)")
STOP_WAIT_S = 5.0  # for the thread to finish a dump it is writing
# a rank opens its FIFO right after making it: one nobody holds open this long after is a dead rank's
ABANDONED_AFTER_S = 60.0


def request_fifo(stacks: Path) -> Path:
    """The FIFO through which the process writing ``stacks`` is asked (node-local, this user's; hashed: one per
    registration, even of one process in several runs)."""
    return files.node_dir() / f"stacks-{hashlib.sha256(str(stacks.resolve()).encode()).hexdigest()[:16]}.fifo"


class _StackWriter(threading.Thread):
    """Waits on the rank's FIFO; each byte the delivery side writes asks for a dump (asks that arrive together give
    one). The FIFO is held open for reading and writing: a writer finds a reader even while the rank is stopped,
    and the read blocks instead of seeing an end of file."""

    def __init__(self, out: Path) -> None:
        super().__init__(name="primus-stacks", daemon=True)
        self.out, self.pid, self.fifo_path = out, os.getpid(), request_fifo(out)  # the path: before any chdir
        self.fifo = os.open(self.fifo_path, os.O_RDWR)
        self.stopping = False

    def run(self) -> None:
        with os.fdopen(self.fifo, "rb", buffering=0) as asks:
            while asks.read(64) and not self.stopping:  # blocks in the kernel, without the GIL, until asked
                with open(self.out, "a", encoding="utf-8") as f:
                    f.write(format_other_threads())

    def stop(self) -> None:
        self.stopping = True
        _ask(self.fifo_path)  # wakes it to see the flag
        self.join(STOP_WAIT_S)
        self.fifo_path.unlink(missing_ok=True)


_registered: dict[Path, _StackWriter] = {}


class StacksOnRequest(Follower):
    """The stacks as a journal follower of the run: listening from its start, released at its end before its files
    are uploaded (which a stall's stacks join)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path: Path | None = None

    def start(self) -> tuple[threading.Thread, ...]:
        self.path = register_for_stacks(self.run_dir)
        return ()

    def ending(self, drained: bool) -> None:
        if self.path is not None:
            release_stacks(self.path)


def stacks_file(run_dir: Path, host: str, pid: int) -> Path:
    return run_dir / STACKS_DIR / f"{host}-{pid}.txt"


def register_for_stacks(run_dir: Path) -> Path | None:
    """Have this process's stacks written to the run's ``stacks/`` when the delivery side asks. Returns the file,
    or None where the node's private folder cannot hold the FIFO (no stacks then, said once)."""
    host, pid = socket.gethostname(), os.getpid()
    path = stacks_file(run_dir, host, pid)
    try:
        _remove_abandoned(files.private_node_dir())  # only this user's processes may ask
        fifo = request_fifo(path)
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo, 0o600)
        writer = _StackWriter(path)
    except OSError as e:
        log.warning("primus tracking: no stacks on a stall for this process: %s", e)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"# primus: stacks of pid {pid} on {host}, started {psutil.Process(pid).create_time():.2f}\n")
    _registered[path] = writer
    writer.start()
    atexit.register(release_stacks, path)
    return path


def release_stacks(path: Path) -> None:
    """No more stacks; the file goes unless it holds a dump (so only a stall's stacks are uploaded)."""
    writer = _registered.get(path)
    if writer is None or writer.pid != os.getpid():  # a forked child's exit must not end its parent's
        return
    del _registered[path]
    writer.stop()
    try:
        with open(path, encoding="utf-8") as f:
            dumped = len(f.readlines()) > 1
        if not dumped:
            path.unlink()
            path.parent.rmdir()  # the last rank's: no stacks/ folder in a run that never stalled
    except OSError:  # another rank's file is still there, or it is gone
        pass


def dump_stacks(run_dir: Path, why: str) -> list[int]:
    """Ask every live rank of this host registered in the run directory for its stacks; returns their pids."""
    host = socket.gethostname()
    asked = []
    for path in sorted((run_dir / STACKS_DIR).glob(f"{host}-*.txt")):
        pid = _live_pid(path, host)
        if pid is None:
            continue
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {why}\n")
        if _ask(request_fifo(path)):
            asked.append(pid)
    return asked


def format_other_threads() -> str:
    """Every thread's stack but the caller's, main thread first, innermost frame first (as faulthandler's)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    me, main = threading.get_ident(), threading.main_thread().ident
    lines = []
    for ident, frame in sorted(sys._current_frames().items(), key=lambda item: item[0] != main):
        if ident == me:
            continue
        lines.append(f'Thread 0x{ident:016x} "{names.get(ident, "?")}" (most recent call first):')
        lines.extend(
            f'  File "{f.f_code.co_filename}", line {lineno} in {f.f_code.co_name}'
            for f, lineno in traceback.walk_stack(frame)
        )
        lines.append("")
    return "\n".join(lines)


def _remove_abandoned(folder: Path) -> None:
    """The FIFOs of ranks that ended without releasing theirs (SIGKILL, the OOM killer): nobody holds them open.
    Left, one more would stay in the node's folder for every such rank until the node restarts."""
    made_before = time.time() - ABANDONED_AFTER_S
    for fifo in folder.glob("stacks-*.fifo"):
        try:
            if fifo.lstat().st_mtime < made_before:
                fd = _write_end(fifo)
                if fd is None:
                    fifo.unlink(missing_ok=True)
                else:
                    os.close(fd)  # a live rank holds it: nothing asked
        except OSError:  # gone meanwhile, or not ours to open: left as it is
            pass


def _ask(fifo: Path) -> bool:
    """One byte into the rank's FIFO; False when nobody holds it open (the rank ended). Never blocks."""
    try:
        fd = _write_end(fifo)
    except OSError as e:
        log.warning("primus tracking: cannot ask for stacks through %s: %s", fifo, e)
        return False
    if fd is None:
        return False
    try:
        os.write(fd, b"?")
    except BlockingIOError:  # the FIFO is full of asks not yet answered: this one is among them
        pass
    finally:
        os.close(fd)
    return True


def _write_end(fifo: Path) -> int | None:
    """A write end of a rank's FIFO, never blocking; None when nobody holds it open (ENXIO: the rank ended) or it
    is gone (ENOENT: the rank released it)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno in (errno.ENXIO, errno.ENOENT):
            return None
        raise


def _live_pid(path: Path, host: str) -> int | None:
    """The process the file belongs to when that very process still runs (not another that got its pid)."""
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
