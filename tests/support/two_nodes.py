"""Two simulated nodes of one job on this host: two torchrun launches with torchrun's own multi-node options (a
static rendezvous on 127.0.0.1), so every rank gets the environment a rank of a two-node job gets (GROUP_RANK,
GROUP_WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and what Primus does per node runs end to end."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from support.launch import start, wait_or_kill
from support.mlflow_server import free_port

NODES = 2


def node_options(node: int, port: int, nproc: int) -> list[str]:
    """torchrun's options for node ``node`` of two, ``nproc`` ranks each, the job's store on node 0 at ``port``."""
    return ["--nnodes", str(NODES), "--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port),
            f"--nproc_per_node={nproc}"]


def run_two_nodes(command: Callable[[list[str]], list[str]], cwd: Path, logs: Sequence[Path],
                  env: Mapping[str, str], timeout: float) -> int | None:
    """Both nodes' launches, ``command(torchrun's options for the node)``, in ``cwd``, each node's output in its log
    (``logs[node]``); the first non-zero exit code, else 0 (None: killed at ``timeout``)."""
    port = free_port()
    processes = [start(command(node_options(node, port, 2)), cwd, logs[node], env) for node in range(NODES)]
    deadline = time.monotonic() + timeout
    codes = [wait_or_kill(p, max(1.0, deadline - time.monotonic())) for p in processes]
    return None if None in codes else next((code for code in codes if code), 0)
