"""The ``/metrics`` endpoint of a node's delivery process, for clusters that scrape rather than take pushes
(PRIMUS_PROMETHEUS_PORT): one HTTP server per process, whichever of its runs opens first starting it, serving the
latest figures of every run the process delivers, each sample labelled with its run's job (the experiment), run,
backend and host, as a push's group would be (scrape it with ``honor_labels: true`` to keep ``job``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Endpoint:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, Callable[[], Any]] = {}  # run's target -> its current figures as a collector
        self._server: Any = None
        self.port: int | None = None

    def serve(self, port: int, run: str, snapshot: Callable[[], Any]) -> None:
        """Serve ``snapshot()``'s figures for ``run`` from now on; OSError when ``port`` cannot be served."""
        with self._lock:
            if self._server is None:
                from prometheus_client.exposition import start_http_server

                self._server, _ = start_http_server(port, registry=self)  # a daemon thread of its own
                self.port = port
            elif port != self.port:
                raise OSError(f"this delivery process already serves /metrics on port {self.port}")
            self._runs[run] = snapshot

    def collect(self) -> list[Any]:
        """prometheus_client's collector: every run's families, one family per name."""
        with self._lock:
            snapshots = [snapshot() for snapshot in self._runs.values()]
        merged: dict[str, Any] = {}
        for snapshot in snapshots:
            for family in snapshot.collect():
                if family.name in merged:
                    merged[family.name].samples.extend(family.samples)
                else:
                    merged[family.name] = family
        return list(merged.values())


ENDPOINT = Endpoint()  # the process's one
