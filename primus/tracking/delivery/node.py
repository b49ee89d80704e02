"""How a rank hands its run to the delivery process its node shares with the job's other ranks (see
``process.py``): a unix socket in a node-local folder, named after the job's directory; the run's pipes and
delivery lock pass through it as descriptors (SCM_RIGHTS), so that process serves the run exactly as a private
child serves one from its command line. The first rank to find none listening starts it.
"""

from __future__ import annotations

import fcntl
import hashlib
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from primus.tracking.journal import files

SERVER_MODULE = "primus.tracking.delivery.node_main"
HELLO = b"run"  # with each run's descriptors: commands (read), replies (write), direct records (read), lock
RUN_FDS = 4
BACKLOG = 128  # ranks that connected before the process accepts: they wait in the socket, never on it


def node_address(group: Path) -> tuple[Path, Path]:
    """The socket and the start lock of the delivery process shared by the runs under ``group`` on this node
    (hashed: a unix socket's path is limited to 107 bytes)."""
    key = hashlib.sha256(str(group).encode()).hexdigest()[:16]
    return files.node_dir() / f"{key}.sock", files.node_dir() / f"{key}.lock"


def attach(group: Path, fds: Sequence[int], env: Mapping[str, str]) -> None:
    """Hand one run's descriptors to the delivery process of ``group`` on this node, first starting it when
    none listens. Never waits for that process to start or to accept; raises OSError when it cannot hand them
    (the caller then starts a private one: nothing was handed)."""
    files.private_node_dir()
    path, lock_path = node_address(group)
    with open(lock_path, "a") as lock, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        # Held while connecting and while starting: one process per job and node, and one that is leaving (it
        # takes this lock to check that no rank is connecting) cannot miss a rank.
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):  # none yet, or one that died left its socket
            start_server(path, lock_path, env)
            sock.connect(str(path))
        socket.send_fds(sock, [HELLO], list(fds))  # queued in the socket until the process accepts


def start_server(path: Path, lock_path: Path, env: Mapping[str, str]) -> None:
    """Bind the socket here and hand it to a new process: ranks connect at once, whatever its start-up takes.
    Its own session, as a private child's: a job's SIGINT/SIGTERM to the group must not cut delivery, and it
    outlives the rank that started it when that rank dies first."""
    path.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(BACKLOG)
        subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, str(listener.fileno()), str(path), str(lock_path)],
            stdin=subprocess.DEVNULL,
            pass_fds=(listener.fileno(),),
            env=dict(env),
            close_fds=True,
            start_new_session=True,
        )
