"""From an experiment and its launch settings to the plan of the one command that starts it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from primus.config import Experiment, ModuleConfig
from primus.launch.container import plan_container
from primus.launch.credentials import environment_problems, missing_credentials
from primus.launch.job import interpreter, prepare_job
from primus.launch.passthrough import load_passthrough
from primus.launch.plan import LaunchPlan
from primus.launch.settings import LaunchSettings
from primus.launch.slurm import plan_slurm
from primus.launch.torchrun import process_argv
from primus.patches.catalog import load_all
from primus.tracking.sinks.plugins import requested_sinks, sink_classes


class LaunchError(ValueError):
    """The job cannot be launched as asked; the message names what to set and how."""


def plan_launch(
    exp: Experiment,
    module: ModuleConfig,
    overrides: Sequence[str],
    settings: LaunchSettings,
    environ: Mapping[str, str] = os.environ,
    python: str = sys.executable,
    cwd: Path | None = None,
) -> LaunchPlan:
    """The plan for ``settings.launcher``; raises ConfigError (bad launch settings or allow-list) or
    LaunchError (a credential an enabled tracker needs is missing) before anything starts."""
    cwd = cwd or Path.cwd()
    python = interpreter(module.framework, python, environ)  # MaxText runs in its own environment
    job = prepare_job(exp, module, overrides, settings.rendezvous.run_id if settings.rendezvous else None)
    if not settings.in_image:  # the job runs this Python environment: a plugin it would fail to load fails here
        _refuse(_plugin_problems(environ))
    if settings.launcher in ("local", "torchrun"):
        _refuse(environment_problems(module, environ))  # first: the credential check reads WANDB_MODE
        _refuse(missing_credentials(module, environ, lambda name: True, home_visible=True))
        # on this machine the command inherits this shell's whole environment, plus Primus's variables
        return LaunchPlan(
            argv=process_argv(python, job.entry, settings),
            env={**environ, **job.env},
            run_dir=job.run_dir,
            shown_env=dict(job.env),
        )
    passthrough = load_passthrough(settings.passthrough, environ)
    _refuse(missing_credentials(module, environ, passthrough.allows, home_visible=not settings.in_image))
    if settings.launcher == "container":
        return plan_container(job, settings, passthrough, environ, cwd)
    return plan_slurm(job, settings, passthrough, environ, python, cwd)


def _plugin_problems(environ: Mapping[str, str]) -> list[str]:
    """What loading the job's plugins (patch modules, the trackers PRIMUS_SINKS names) would refuse."""
    try:
        load_all()
        sink_classes(requested_sinks(environ))
    except ValueError as e:
        return [str(e)]
    return []


def _refuse(problems: list[str]) -> None:
    if problems:
        raise LaunchError("\n".join(["cannot launch:", *(f"  - {p}" for p in problems)]))
