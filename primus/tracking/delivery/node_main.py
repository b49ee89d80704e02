"""The delivery process a node's ranks share (see ``process.py``):
``python -m primus.tracking.delivery.node_main LISTENER_FD SOCKET START_LOCK``.

Each connection brings one run's descriptors (``node.attach``); the run is delivered on a thread of its
own by ``child.deliver``, as a private delivery process delivers its one. The process ends when it
serves no run and no rank is attaching.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import select
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from primus.tracking.delivery.child import Replies, Routes, configure_process, deliver, exit_process
from primus.tracking.delivery.node import HELLO, RUN_FDS
from primus.tracking.delivery.process import DeliverySpec

log = logging.getLogger("primus.tracking")

IDLE_CHECK_S = 0.2  # how often a process serving no run checks whether to leave


class NodeDelivery:
    def __init__(self, listener: socket.socket, socket_path: Path, lock_path: Path):
        self.listener = listener
        self.socket_path = socket_path
        self.lock_path = lock_path
        self.routes = Routes()
        self.shared: dict[str, Any] = {}  # what the runs' followers share (a job's ranks post each alert once)
        self.served = 0  # runs accepted so far
        self._running = 0
        self._lock = threading.Lock()

    def serve(self) -> None:
        """Accept runs until none is left and no rank is attaching."""
        while True:
            if select.select([self.listener], [], [], IDLE_CHECK_S)[0]:
                self.accept()
            elif self.idle() and self.leave():
                return

    def idle(self) -> bool:
        with self._lock:
            return self._running == 0

    def leave(self) -> bool:
        """Under the start lock, which a rank holds from its connect to its hand-over: a rank that attached
        is in the socket's queue now (stay and serve it), and no later one finds this socket."""
        with open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if select.select([self.listener], [], [], 0)[0]:
                return False
            self.socket_path.unlink(missing_ok=True)
            return True

    def accept(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            try:
                hello, fds, _, _ = socket.recv_fds(
                    connection, len(HELLO), RUN_FDS, getattr(socket, "MSG_CMSG_CLOEXEC", 0)
                )  # Linux's; close_fds elsewhere
            except OSError as e:
                log.debug("primus tracking: a rank's hand-over failed: %r", e)
                return
        if hello != HELLO or len(fds) != RUN_FDS:
            for fd in fds:
                os.close(fd)
            return
        with self._lock:
            self._running += 1
            self.served += 1
        threading.Thread(
            target=self.deliver_run, args=(fds,), name=f"primus-delivery-run-{self.served}", daemon=True
        ).start()

    def deliver_run(self, fds: list[int]) -> None:
        commands_fd, replies_fd, direct_fd, lock_fd = fds
        replies = Replies(replies_fd)
        self.routes.add(replies, [threading.current_thread()])
        delivered = False
        # what a sink's thread logs or its tracker client prints there goes to this run's trainer
        started = functools.partial(self.routes.add_threads, replies)
        try:
            with os.fdopen(commands_fd, "rb") as commands:
                spec = DeliverySpec.decode(commands.readline())
                primus_log = logging.getLogger("primus")
                primus_log.setLevel(min(primus_log.level, spec.log_level))  # the most any run asked for
                delivered = deliver(spec, commands, replies, os.fdopen(direct_fd, "rb"), lock_fd, started, self.shared)
        except Exception:  # noqa: BLE001 - one run's failure must not end the others'; its trainer hears of it
            log.exception("primus tracking: the shared delivery process failed to deliver a run")
        finally:
            self.routes.remove(replies)
            replies.close()  # the trainer sees its end: "closed" came first, else it reports this run undelivered
            if delivered:  # else a sink may still be stuck in its client: no `primus tracking sync` beside it
                os.close(lock_fd)
            with self._lock:
                self._running -= 1


def main(argv: list[str]) -> None:
    listener = socket.socket(fileno=int(argv[1]))
    node = NodeDelivery(listener, Path(argv[2]), Path(argv[3]))
    configure_process(node.routes, logging.WARNING)  # each run lowers it to its trainer's level
    node.serve()
    exit_process()


if __name__ == "__main__":
    main(sys.argv)
