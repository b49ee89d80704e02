"""Launch in a container: ``docker run`` / ``podman run`` of the image with the same process command.

The working directory, the experiment's folder and the run directory are mounted at their own paths,
so every path in the experiment means the same inside; host networking and IPC let torchrun's ranks
and nodes meet as they would outside. Allow-listed variables are passed as ``-e NAME`` (the runtime
reads the value from this environment); only Primus's own variables are written as ``-e NAME=value``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from primus.launch.job import Job
from primus.launch.passthrough import Passthrough
from primus.launch.plan import LaunchPlan
from primus.launch.settings import LaunchSettings
from primus.launch.torchrun import process_argv

BASE_OPTIONS = ("--rm", "--ipc=host", "--network=host")


def plan_container(
    job: Job, settings: LaunchSettings, passthrough: Passthrough, environ: Mapping[str, str], cwd: Path
) -> LaunchPlan:
    c = settings.container
    assert c.image is not None, "the settings check refuses the container launcher without an image"
    argv = [c.runtime, "run", *BASE_OPTIONS]
    for mount in image_mounts(job, cwd, c.mounts):
        argv += ["-v", mount]
    argv += ["-w", str(cwd)]
    for name, value in job.env.items():
        argv += ["-e", f"{name}={value}"]
    for name in passthrough.select(environ, skip=job.env):
        argv += ["-e", name]
    argv += [*c.extra_args, c.image, *process_argv(c.python, job.entry, settings)]
    # the run directory exists before the runtime mounts it (docker would create it owned by root)
    return LaunchPlan(argv=argv, env=dict(environ), run_dir=job.run_dir, make_dirs=(job.run_dir,))


def image_mounts(job: Job, cwd: Path, extra: Sequence[str]) -> list[str]:
    """SRC:DST[:OPTIONS] of every mount: the working directory, the experiment's folder and the run directory
    at their own paths (so every path in the experiment means the same inside), then ``extra``."""
    return [*(f"{p}:{p}" for p in _own_paths([cwd, job.source.parent, job.run_dir])), *extra]


def _own_paths(paths: list[Path]) -> list[Path]:
    """The paths to mount, without one already inside another mounted path."""
    kept: list[Path] = []
    for path in sorted({p.absolute() for p in paths}, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept
