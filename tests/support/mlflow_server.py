"""A real ``mlflow server`` on 127.0.0.1 for tests: sqlite backend, proxied artifacts, ``--workers 1``
and the job executor off (2 processes, ~0.5 GB instead of 15 and 2.5 GB). Fault tests can SIGKILL
it, SIGSTOP/SIGCONT it (a hung server) and restart it on the same port and database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

SERVER_ENV = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true",
              "DO_NOT_TRACK": "true", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
START_TIMEOUT_S = 180.0  # 5-6 s on a quiet box, up to a minute or two on a loaded 2-core CI box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    def __init__(self, root: Path, port: int | None = None):
        """``port``: of a server another process of this test session started and stops (xdist's controlling
        process); none given, a free one for ``start``."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log_path = self.root / "server.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MlflowServer:
        mlflow_bin = Path(sys.executable).with_name("mlflow")
        cmd = [str(mlflow_bin), "server", "--backend-store-uri", f"sqlite:///{self.root / 'mlflow.db'}",
               "--artifacts-destination", str(self.root / "artifacts"), "--host", "127.0.0.1",
               "--port", str(self.port), "--workers", "1"]
        with open(self.log_path, "ab") as logfile:
            self.proc = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, **SERVER_ENV})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited with {self.proc.returncode}; see {self.log_path}")
            if self.healthy():
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"mlflow server not healthy after {START_TIMEOUT_S} s; see {self.log_path}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _tree(self) -> list[psutil.Process]:
        try:
            parent = psutil.Process(self.proc.pid)
            return parent.children(recursive=True) + [parent]
        except psutil.Error:
            return []

    def _signal_tree(self, sig: int) -> None:
        for p in self._tree():
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass

    def kill(self) -> None:
        """A crash: SIGKILL the server's whole process tree."""
        self._signal_tree(signal.SIGKILL)
        self.proc.wait(30)

    def pause(self) -> None:
        """A hung server: the port accepts connections, nothing answers."""
        self._signal_tree(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_tree(signal.SIGCONT)

    def restart(self) -> MlflowServer:
        if self.running():
            self.kill()
        return self.start()

    def stop(self) -> None:
        if not self.running():
            return
        tree = self._tree()
        self.resume()
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        for p in tree:
            try:
                p.kill()
            except psutil.Error:
                pass
        self.proc.wait(15)
