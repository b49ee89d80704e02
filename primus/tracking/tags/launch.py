"""Where and how the run was launched, as tags every tracker gets (``system.py``), read from what the launchers
put in the environment; a tag whose source is absent is left out.

* Slurm: ``SLURM_JOB_ID``, ``SLURM_ARRAY_JOB_ID`` / ``SLURM_ARRAY_TASK_ID``, ``SLURM_RESTART_COUNT`` (a requeued
  job), ``SLURM_JOB_NUM_NODES`` and ``SLURM_JOB_NODELIST`` (compressed, ``node[01-04]``: its first host).
* torchrun: ``TORCHELASTIC_RESTART_COUNT`` (restarts of the worker group), ``GROUP_WORLD_SIZE`` (nodes) and
  ``MASTER_ADDR`` (rank 0's host) where Slurm says nothing; else one host, this one.
* The container image, from the first of ``CONTAINER_VARIABLES`` that is set: ``PRIMUS_CONTAINER_IMAGE`` (yours:
  Kubernetes tells a pod nothing of its image, so set it from the pod spec), Slurm's pyxis plugin
  (``srun --container-image`` exports ``SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image``; pyxis also reads
  ``PYXIS_CONTAINER_IMAGE``), Slurm's own OCI containers (``SLURM_CONTAINER``), Apptainer/Singularity
  (``APPTAINER_CONTAINER``, ``SINGULARITY_CONTAINER``: the image file). Docker and enroot alone set none.
* The command line of this process, redacted (``primus.redaction``)."""

from __future__ import annotations

import re
import shlex
import socket
from collections.abc import Mapping, Sequence

from primus.redaction import redact_text

CONTAINER_VARIABLES = (
    "PRIMUS_CONTAINER_IMAGE",
    "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
    "PYXIS_CONTAINER_IMAGE",
    "SLURM_CONTAINER",
    "APPTAINER_CONTAINER",
    "SINGULARITY_CONTAINER",
)
# tag -> the variables it is read from, first set wins
COPIED = {
    "primus.slurm.job_id": ("SLURM_JOB_ID", "SLURM_JOBID"),
    "primus.slurm.array_job_id": ("SLURM_ARRAY_JOB_ID",),
    "primus.slurm.array_task_id": ("SLURM_ARRAY_TASK_ID",),
    "primus.slurm.restart_count": ("SLURM_RESTART_COUNT",),
    "primus.torchelastic.restart_count": ("TORCHELASTIC_RESTART_COUNT",),
}
_HOSTLIST_HEAD = re.compile(r"(?P<prefix>[^,\[]*)(?:\[(?P<first>[^-,\]]+))?")


def launch_tags(environ: Mapping[str, str], argv: Sequence[str]) -> dict[str, str]:
    tags = {tag: value for tag, names in COPIED.items() if (value := _first(environ, names)) is not None}
    tags.update(_hosts(environ))
    image = next(((name, environ[name]) for name in CONTAINER_VARIABLES if environ.get(name)), None)
    if image is not None:
        tags["primus.container.image"] = redact_text(image[1])
        tags["primus.container.image_from"] = image[0]
    if argv:
        tags["primus.launch_command"] = redact_text(shlex.join(argv))
    return tags


def first_host(nodelist: str) -> str:
    """The first host of a Slurm hostlist: ``gpu[003-010,12],cpu1`` -> ``gpu003``."""
    match = _HOSTLIST_HEAD.match(nodelist.strip())
    assert match is not None  # the pattern matches any text, if only its empty start
    return match["prefix"] + (match["first"] or "")


def _hosts(environ: Mapping[str, str]) -> dict[str, str]:
    nodelist = _first(environ, ("SLURM_JOB_NODELIST", "SLURM_NODELIST"))
    count = _first(environ, ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"))
    if nodelist is None:
        count = environ.get("GROUP_WORLD_SIZE") or "1"
        host = environ.get("MASTER_ADDR") if count != "1" else None
        return {"primus.hosts.count": count, "primus.hosts.first": host or socket.gethostname()}
    return {"primus.hosts.first": first_host(nodelist), **({"primus.hosts.count": count} if count else {})}


def _first(environ: Mapping[str, str], names: Sequence[str]) -> str | None:
    return next((environ[name] for name in names if environ.get(name)), None)
