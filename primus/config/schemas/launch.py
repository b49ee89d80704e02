"""The experiment's optional ``launch:`` block: where and how `primus train` starts the job (launcher,
processes and nodes, Slurm, container) and which environment variables reach it (``passthrough``).
Command-line flags of `primus train` override these keys one by one."""

from __future__ import annotations

from primus.config.schema import Param, Schema

LAUNCHERS = ("local", "torchrun", "slurm", "container")
CONTAINER_RUNTIMES = ("docker", "podman")  # the container launcher's
SLURM_RUNTIMES = ("pyxis", "apptainer")  # what runs a Slurm job's step in an image
GPU_VENDORS = ("nvidia", "amd")


def passthrough_params(prefix: str = "") -> list[Param]:
    """An environment allow-list layer: the packaged default, a user file, or ``launch.passthrough``."""
    return [
        Param(f"{prefix}names", "str", default=(), is_list=True, help="Variables passed by name when set."),
        Param(f"{prefix}prefixes", "str", default=(), is_list=True, help="Every set variable starting with one."),
        Param(
            f"{prefix}exclude",
            "str",
            default=(),
            is_list=True,
            help="Names (or listed prefixes) an earlier layer allowed, not to pass.",
        ),
        Param(
            f"{prefix}host",
            "str",
            default=(),
            is_list=True,
            help="The launching shell's runtime (PATH, ...): passed to Slurm jobs, never into containers.",
        ),
    ]


PASSTHROUGH_SCHEMA = Schema("passthrough key", passthrough_params())

LAUNCH_SCHEMA = Schema(
    "launch setting",
    [
        Param(
            "launcher",
            "str",
            default="local",
            choices=LAUNCHERS,
            help="local (torchrun when more than one process), torchrun, slurm or container.",
        ),
        Param(
            "nproc_per_node",
            "int",
            nullable=True,
            help="Processes per node; default slurm.gpus_per_node under Slurm, else 1.",
        ),
        Param("nnodes", "int", default=1, help="Nodes the job spans."),
        Param("node_rank", "int", nullable=True, help="This node's rank (static rendezvous); omit for c10d."),
        Param("rdzv_endpoint", "str", nullable=True, help="HOST:PORT every node of a multi-node job meets at."),
        Param(
            "rdzv_id",
            "str",
            nullable=True,
            help="The job's id, the same on every node; names the run directory. Default: SLURM_JOB_ID.",
        ),
        Param(
            "upstream_check",
            "str",
            nullable=True,
            choices=("strict", "warn"),
            help="How an upstream release outside Primus's supported range is met: strict (refused, naming it) or "
            "warn (tried, said once, the run tagged primus.upstream.untested). Sets PRIMUS_UPSTREAM_CHECK for the "
            "job; null: the environment's, else strict.",
        ),
        *passthrough_params("passthrough."),
        Param(
            "slurm.submit",
            "str",
            default="sbatch",
            choices=("sbatch", "srun"),
            help="sbatch (a batch script) or srun (runs attached to this terminal).",
        ),
        Param("slurm.partition", "str", nullable=True, help="--partition."),
        Param("slurm.time", "str", nullable=True, help="--time, e.g. 02:00:00."),
        Param("slurm.account", "str", nullable=True, help="--account."),
        Param("slurm.qos", "str", nullable=True, help="--qos, e.g. high."),
        Param("slurm.gpus_per_node", "int", nullable=True, help="--gpus-per-node; omitted when null."),
        Param(
            "slurm.cpus_per_task",
            "int",
            nullable=True,
            ge=1,
            help="--cpus-per-task: CPUs for each node's task (its torchrun and every rank's data loading).",
        ),
        Param("slurm.exclusive", "bool", default=False, help="--exclusive: the nodes are not shared with other jobs."),
        Param("slurm.job_name", "str", nullable=True, help="--job-name; default the experiment's name."),
        Param("slurm.master_port", "int", default=29500, help="Port of the torchrun rendezvous on the first node."),
        Param(
            "slurm.requeue",
            "bool",
            default=False,
            help="sbatch: when training fails, the job requeues itself (--requeue, scontrol requeue) and resumes in "
            "the same run directory; never after a no_progress stop (primus_no_progress_restarts), whose exit "
            "code 93 says not to.",
        ),
        Param(
            "slurm.extra_args",
            "str",
            default=(),
            is_list=True,
            help="More sbatch/srun options, e.g. --constraint=mi300x.",
        ),
        Param(
            "container.image",
            "str",
            nullable=True,
            help="The image; it must have primus installed. With launcher slurm, each node's step runs in it.",
        ),
        Param(
            "container.runtime",
            "str",
            nullable=True,
            choices=(*CONTAINER_RUNTIMES, *SLURM_RUNTIMES),
            help="docker or podman (launcher container; default docker); pyxis (srun --container-image) or "
            "apptainer (apptainer exec) under Slurm (default pyxis).",
        ),
        Param(
            "container.gpu_vendor",
            "str",
            nullable=True,
            choices=GPU_VENDORS,
            help="apptainer only: nvidia (--nv) or amd (--rocm) shows the node's GPUs to the container.",
        ),
        Param("container.python", "str", default="python", help="The image's Python."),
        Param(
            "container.mounts",
            "str",
            default=(),
            is_list=True,
            help="More SRC:DST[:OPTIONS] mounts; the working directory, the experiment's folder and the run "
            "directory are always mounted at their own paths.",
        ),
        Param(
            "container.extra_args",
            "str",
            default=(),
            is_list=True,
            help="More options of the runtime: docker/podman run (--gpus=all for NVIDIA, --device=/dev/kfd "
            "--device=/dev/dri for AMD), apptainer exec (--writable-tmpfs), srun's pyxis options "
            "(--container-remap-root).",
        ),
    ],
)
