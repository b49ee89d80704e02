"""What a run directory remembers between processes (``files`` names them): ``run.json``, the cursors and
the locks. JSON files are written atomically (temp file + rename); a cursor for another target (an MLflow run id, a
W&B id, a log dir) than the sink's now reads as 0."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from primus.tracking.journal.files import CURSORS_DIR, DELIVERY_LOCK, LOCK_FILE, STATE_FILE

log = logging.getLogger("primus.tracking")


class RunDirBusyError(RuntimeError):
    pass


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


class RunDirLock:
    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunDirLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RunDirBusyError(
                f"run directory {self.path.parent} is in use by pid {holder}: give each tracked "
                f"process (each rank that logs) its own run_dir, or wait for it to exit"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def delivery_lock(run_dir: Path) -> int:
    """A descriptor of the run's delivery lock file, unlocked. Held by a delivery process while it feeds the
    trackers: a trainer relaunched after a SIGKILL (torchrun's restarts) gets a new delivery process while the old
    one may still deliver the killed launch's steps; the new one, and ``primus tracking sync``, wait for it, so two
    never feed the same MLflow and W&B runs at once."""
    return os.open(run_dir / DELIVERY_LOCK, os.O_RDWR | os.O_CREAT, 0o644)


class RunState:
    """``run.json`` as sections (``mlflow``, ``wandb``, ``run``), shared by the training process and its
    delivery process: every read is fresh from the file and every update a read-modify-write under a
    file lock, so neither process overwrites a section the other wrote."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / STATE_FILE
        self._lock_path = run_dir / f".{STATE_FILE}.lock"
        self._lock = threading.Lock()

    def section(self, name: str) -> dict[str, Any]:
        return dict(read_json(self.path).get(name, {}))

    def update(self, name: str, **values: Any) -> None:
        with self._lock, open(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            data = read_json(self.path)
            data.setdefault(name, {}).update(values)
            write_json_atomic(self.path, data)


class CursorStore:
    def __init__(self, run_dir: Path):
        self.dir = run_dir / CURSORS_DIR
        self.dir.mkdir(exist_ok=True)
        self._unsaved: set[str] = set()

    def load(self, sink: str, target: str | None) -> int:
        saved = read_json(self.dir / f"{sink}.json")
        return int(saved.get("offset", 0)) if saved.get("target") == target else 0

    def offset(self, sink: str) -> int:
        """How far ``sink`` delivered, whatever its target (0: nothing saved)."""
        return int(read_json(self.dir / f"{sink}.json").get("offset", 0))

    def save(self, sink: str, target: str | None, offset: int) -> None:
        """Best effort: on a full disk the saved cursor lags (a crash then resends a little, which the trackers
        take as the same points) rather than stop the sink."""
        try:
            write_json_atomic(self.dir / f"{sink}.json", {"target": target, "offset": offset})
        except OSError as e:
            if sink not in self._unsaved:
                self._unsaved.add(sink)
                log.warning(
                    "primus tracking: could not save %s's journal cursor in %s (%s); it is kept in memory "
                    "and saved again with the next delivery",
                    sink,
                    self.dir,
                    e.strerror or e,
                )
        else:
            self._unsaved.discard(sink)
