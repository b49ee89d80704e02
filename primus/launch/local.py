"""Launch on this machine: one process, or torchrun (this node's share of a multi-node job).

The command inherits this shell's whole environment, as any command started from it does, plus
Primus's variables (the experiment, the overrides, the run directory)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from primus.launch.job import Job
from primus.launch.plan import LaunchPlan
from primus.launch.settings import LaunchSettings
from primus.launch.torchrun import process_argv


def plan_local_launch(
    job: Job, settings: LaunchSettings, environ: Mapping[str, str] = os.environ, python: str = sys.executable
) -> LaunchPlan:
    return LaunchPlan(
        argv=process_argv(python, job.entry, settings),
        env={**environ, **job.env},
        run_dir=job.run_dir,
        shown_env=dict(job.env),
    )
