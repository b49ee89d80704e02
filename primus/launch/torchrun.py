"""The process command on one node: ``python -m <entry>`` for one process, else torchrun with the node's
share of the processes and the rendezvous that joins the nodes."""

from __future__ import annotations

from collections.abc import Sequence

from primus.launch.settings import LaunchSettings, Rendezvous


def torchrun_argv(python: str, entry: str, nproc_per_node: int, rendezvous: Sequence[str]) -> list[str]:
    return [python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc_per_node}", *rendezvous, "-m", entry]


def rendezvous_args(rendezvous: Rendezvous | None) -> list[str]:
    """One node: torchrun's standalone rendezvous on a free local port. Several: static with the node's
    rank (the first node's address and port) when --node-rank is given, else c10d, which numbers the nodes."""
    if rendezvous is None:
        return ["--standalone", "--nnodes=1"]
    r = rendezvous
    if r.node_rank is not None:
        return [
            f"--nnodes={r.nnodes}",
            f"--node_rank={r.node_rank}",
            f"--master_addr={r.host}",
            f"--master_port={r.port}",
        ]
    return [
        f"--nnodes={r.nnodes}",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint={r.host}:{r.port}",
        f"--rdzv_id={r.run_id}",
    ]


def process_argv(python: str, entry: str, settings: LaunchSettings) -> list[str]:
    """torchrun when asked for, or when the job has more than one process or node."""
    single = settings.nproc_per_node == 1 and settings.rendezvous is None
    if single and settings.launcher != "torchrun":
        return [python, "-m", entry]
    return torchrun_argv(python, entry, settings.nproc_per_node, rendezvous_args(settings.rendezvous))
