"""A Slurm job's step in a container image: through Pyxis (``srun --container-image``, the default) or
Apptainer (``apptainer exec``, started by the step on each node).

Both mount what the container launcher mounts (``image_mounts``: the working directory, the experiment's
folder and the run directory at their own paths, then ``launch.container.mounts``) and start in the
working directory. The environment goes by name only: Pyxis gives the container the step's environment, which
with an image is the allow-list without the host runtime (a variable the image sets keeps the image's value).
Apptainer starts on the node with the step's environment, host runtime included (the step needs PATH to find
it), and passes its own environment into the container, so the host runtime is removed for it (``env -u NAME``),
except what apptainer needs to start and replaces inside the container.

The first host: a Pyxis step runs wholly in the image, which has primus but rarely scontrol, so
``python -m primus.launch.first_host`` reads it from SLURM_JOB_NODELIST; Apptainer's step starts on the node,
where scontrol is."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from primus.config.schemas.launch import SLURM_RUNTIMES
from primus.launch.container import image_mounts
from primus.launch.job import Job
from primus.launch.plan import shell_line
from primus.launch.settings import ContainerSettings

PYXIS, APPTAINER = SLURM_RUNTIMES
GPU_OPTIONS = {"nvidia": "--nv", "amd": "--rocm"}
KEPT_FOR_APPTAINER = ("PATH", "HOME", "USER")  # it needs them to start, and sets the container's own
FIRST_HOST_MODULE = "primus.launch.first_host"


def pyxis_options(job: Job, c: ContainerSettings, cwd: Path) -> list[str]:
    """srun's Pyxis options for the step (mounts are comma-separated: the settings refused a comma in one)."""
    return [
        f"--container-image={c.image}",
        f"--container-mounts={','.join(image_mounts(job, cwd, c.mounts))}",
        f"--container-workdir={cwd}",
        *c.extra_args,
    ]


def pyxis_first_host(python: str) -> str:
    """The node step's line that sets MASTER_ADDR inside the image; the step stops if it cannot."""
    return f"MASTER_ADDR=$({shell_line([python, '-m', FIRST_HOST_MODULE])}) || exit 1"


def apptainer_prefix(job: Job, c: ContainerSettings, cwd: Path, host_names: Sequence[str]) -> list[str]:
    """The words before the image's command: ``[env -u NAME ...] apptainer exec [--nv|--rocm] --bind ... IMAGE``.
    ``host_names``: the host runtime variables the step has (set in the launching environment)."""
    removed = [word for name in host_names if name not in KEPT_FOR_APPTAINER for word in ("-u", name)]
    argv = [*(["env", *removed] if removed else []), "apptainer", "exec"]
    if c.gpu_vendor is not None:
        argv.append(GPU_OPTIONS[c.gpu_vendor])
    for mount in image_mounts(job, cwd, c.mounts):
        argv += ["--bind", mount]
    return [*argv, "--pwd", str(cwd), *c.extra_args, str(c.image)]
