"""The launch settings of one `primus train`: the experiment's ``launch:`` block with the command-line
flags over it, typed, defaulted and checked together before anything starts."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from primus.config import ConfigError
from primus.config.schemas.launch import CONTAINER_RUNTIMES, LAUNCH_SCHEMA, SLURM_RUNTIMES
from primus.config.tree import set_dotted

SLURM_JOB_ID_ENV = "SLURM_JOB_ID"
_Section = TypeVar("_Section", "SlurmSettings", "ContainerSettings")


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node torchrun meet; None for one node."""

    nnodes: int
    host: str
    port: int
    run_id: str  # the same on every node: torchrun's --rdzv_id and the run directory's name
    node_rank: int | None  # given: static rendezvous (this node's rank); None: c10d assigns ranks


@dataclass(frozen=True)
class SlurmSettings:
    submit: str
    partition: str | None
    time: str | None
    account: str | None
    qos: str | None
    gpus_per_node: int | None
    cpus_per_task: int | None
    exclusive: bool
    job_name: str | None
    master_port: int
    extra_args: tuple[str, ...]
    requeue: bool


@dataclass(frozen=True)
class ContainerSettings:
    image: str | None
    runtime: str  # docker or podman (launcher container), pyxis or apptainer (launcher slurm)
    gpu_vendor: str | None  # apptainer: nvidia (--nv) or amd (--rocm)
    python: str
    mounts: tuple[str, ...]
    extra_args: tuple[str, ...]


@dataclass(frozen=True)
class LaunchSettings:
    launcher: str
    nproc_per_node: int
    nnodes: int
    rendezvous: Rendezvous | None
    passthrough: Mapping[str, Any]  # the experiment's allow-list layer (names, prefixes, exclude, host)
    slurm: SlurmSettings
    container: ContainerSettings

    @property
    def in_image(self) -> bool:
        """The job runs in a container image: the container launcher, or a Slurm job given an image."""
        return self.launcher == "container" or (self.launcher == "slurm" and self.container.image is not None)


def resolve_settings(block: Mapping[str, Any], flags: Mapping[str, Any], environ: Mapping[str, str]) -> LaunchSettings:
    """``flags`` maps dotted launch keys (``slurm.partition``) to values given on the command line;
    None means not given. ``container.mounts`` from flags add to the experiment's. Raises ConfigError
    listing every problem, each naming the key (and the flag) with the fix."""
    tree = copy.deepcopy(dict(block))
    for key, value in flags.items():
        if value is None:
            continue
        if key == "container.mounts":
            value = [*tree.get("container", {}).get("mounts", ()), *value]
        set_dotted(tree, key, value)
    typed, problems = LAUNCH_SCHEMA.validate(tree, "launch")
    if problems:
        raise ConfigError(problems)
    get = _defaulted(typed)

    launcher = get("launcher")
    slurm = _settings(SlurmSettings, "slurm", get)
    container = _settings(ContainerSettings, "container", get)
    if not container.runtime:
        container = replace(container, runtime=SLURM_RUNTIMES[0] if launcher == "slurm" else CONTAINER_RUNTIMES[0])
    nproc = get("nproc_per_node")
    if nproc is None:
        nproc = (slurm.gpus_per_node if launcher == "slurm" else None) or 1
    nnodes = get("nnodes")

    if nproc < 1:
        problems.append(_problem("launch.nproc_per_node (--nproc-per-node)", nproc, "give at least 1"))
    if nnodes < 1:
        problems.append(_problem("launch.nnodes (--nnodes)", nnodes, "give at least 1"))
    if slurm.gpus_per_node is not None and slurm.gpus_per_node < 0:
        fix = "give 0 or more, or leave it unset"
        problems.append(_problem("launch.slurm.gpus_per_node (--gpus-per-node)", slurm.gpus_per_node, fix))
    if not 0 < slurm.master_port < 65536:
        problems.append(_problem("launch.slurm.master_port", slurm.master_port, "give a TCP port, e.g. 29500"))
    rendezvous = None
    if launcher == "slurm":
        for key, flag in (("node_rank", "--node-rank"), ("rdzv_endpoint", "--rdzv-endpoint")):
            if get(key) is not None:
                fix = "remove it: under Slurm every node gets its rank and the first node's address from Slurm"
                problems.append(_problem(f"launch.{key} ({flag})", get(key), fix))
    elif nnodes > 1 or get("node_rank") is not None or get("rdzv_endpoint") is not None:
        rendezvous = _rendezvous(get, nnodes, environ, problems)
    if launcher == "container" and not container.image:
        fix = "name the image to run, e.g. --image rocm/megatron-lm:latest (with primus installed)"
        problems.append(_problem("launch.container.image (--image)", container.image, fix))
    _check_image_runtime(launcher, container, get("container.runtime") is not None, slurm.gpus_per_node, problems)
    if problems:
        raise ConfigError(problems)
    return LaunchSettings(launcher, nproc, nnodes, rendezvous, dict(typed.get("passthrough", {})), slurm, container)


def _settings(cls: type[_Section], section: str, get: Callable[[str], Any]) -> _Section:
    """``cls`` from the keys of one section of the launch block: each field is named as its key (lists as tuples)."""
    values = {f.name: get(f"{section}.{f.name}") for f in fields(cls)}
    kwargs: dict[str, Any] = {name: tuple(v) if isinstance(v, list) else v for name, v in values.items()}
    return cls(**kwargs)


def _check_image_runtime(
    launcher: str, c: ContainerSettings, runtime_given: bool, gpus_per_node: int | None, problems: list[str]
) -> None:
    """The runtime fits the launcher, and what it needs is there: these combinations would fail on the cluster,
    minutes after submitting, or run without the GPUs."""
    runtime_key = "launch.container.runtime (--container-runtime)"
    if launcher == "container" and c.runtime not in CONTAINER_RUNTIMES:
        fix = "pyxis and apptainer run images in Slurm jobs: add --launcher slurm, or use docker or podman"
        problems.append(_problem(runtime_key, c.runtime, fix))
    elif launcher == "slurm" and c.runtime not in SLURM_RUNTIMES:
        fix = "a Slurm job runs its image through pyxis (srun --container-image, the default) or apptainer"
        problems.append(_problem(runtime_key, c.runtime, fix))
    if launcher != "container" and runtime_given and not c.image:
        fix = (
            "a runtime runs the job in an image: name it with --image IMAGE (launch.container.image), "
            "or drop --container-runtime"
        )
        problems.append(_problem(runtime_key, c.runtime, fix))
    vendor_key = "launch.container.gpu_vendor (--gpu-vendor)"
    if c.gpu_vendor is not None and c.runtime != "apptainer":
        fix = (
            f"only apptainer needs it (--nv/--rocm), and the runtime is {c.runtime}: remove it, or add "
            f"--container-runtime apptainer (pyxis gets the GPUs Slurm allocates; docker and podman take --gpus or "
            f"--device in launch.container.extra_args)"
        )
        problems.append(_problem(vendor_key, c.gpu_vendor, fix))
    in_image = launcher == "slurm" and c.image
    if in_image and c.runtime == "apptainer" and gpus_per_node and c.gpu_vendor is None:
        fix = (
            f"the job asks for {gpus_per_node} GPUs per node and apptainer shows them to the container only with "
            f"--nv or --rocm: give --gpu-vendor nvidia or --gpu-vendor amd"
        )
        problems.append(_problem(vendor_key, c.gpu_vendor, fix))
    for mount in c.mounts if in_image and c.runtime == "pyxis" else ():
        if "," in mount:
            fix = "pyxis separates mounts with ',': join a mount's flags with '+', e.g. /data:/data:ro+rprivate"
            problems.append(_problem("launch.container.mounts (--mount)", mount, fix))


def _rendezvous(
    get: Callable[[str], Any], nnodes: int, environ: Mapping[str, str], problems: list[str]
) -> Rendezvous | None:
    endpoint, node_rank = get("rdzv_endpoint"), get("node_rank")
    run_id = get("rdzv_id") or environ.get(SLURM_JOB_ID_ENV)
    if nnodes <= 1:
        fix = "give the number of nodes (2 or more) with --node-rank/--rdzv-endpoint, or drop those for one node"
        problems.append(_problem("launch.nnodes (--nnodes)", nnodes, fix))
    host, _, port = (endpoint or "").rpartition(":")
    if not (host and port.isdigit() and 0 < int(port) < 65536):
        fix = "give HOST:PORT of the first node, the same on every node, e.g. node001:29500"
        problems.append(_problem("launch.rdzv_endpoint (--rdzv-endpoint)", endpoint, fix))
    if not run_id:
        fix = "give a job id, the same on every node (it names the shared run directory), e.g. --rdzv-id llama-0412"
        problems.append(_problem("launch.rdzv_id (--rdzv-id)", run_id, fix))
    if node_rank is not None and not 0 <= node_rank < nnodes:
        fix = f"give this node's rank, 0 to {nnodes - 1}, or leave it unset for c10d rendezvous"
        problems.append(_problem("launch.node_rank (--node-rank)", node_rank, fix))
    if problems:
        return None
    return Rendezvous(nnodes=nnodes, host=host, port=int(port), run_id=str(run_id), node_rank=node_rank)


def _defaulted(typed: Mapping[str, Any]) -> Callable[[str], Any]:
    """A getter for dotted keys: the typed value, else the schema's default."""

    def get(dotted: str) -> Any:
        node: Any = typed
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return LAUNCH_SCHEMA.params[dotted].default
            node = node[part]
        return node

    return get


def _problem(key: str, value: Any, fix: str) -> str:
    return f"{key} = {value!r}: {fix}"
