"""W&B settings for TorchTitan (spec §7). Upstream's ``WandBLogger`` reads them from the environment;
W&B is now a sink of the hub, which reads the same variables: WANDB_PROJECT (upstream's default
"torchtitan"), WANDB_RUN_NAME, WANDB_TEAM (the entity). Missing credentials are a warning, as for
Megatron: offline mode and `wandb login` are valid and the journal keeps every metric either way."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from primus.tracking import WandbConfig
from primus.tracking.credentials import has_wandb_credentials

UPSTREAM_DEFAULT_PROJECT = "torchtitan"
# Upstream passes these to wandb.init; the hub does not: it chooses and keeps the run id (resume).
NOT_PASSED = {
    "WANDB_RUN_ID": "the run id is chosen once and kept in the run directory, so a restart resumes the same run",
    "WANDB_RESUME_FROM": "rewinding a run is not supported; a restarted job resumes its own run",
    "WANDB_FORK_FROM": "forking a run is not supported",
    "WANDB_RUN_NOTES": "use WANDB_NOTES, which wandb reads itself",
    "WANDB_RUN_TAGS": "use WANDB_TAGS (comma-separated), which wandb reads itself",
}


def wandb_settings(save_dir: Path, warnings: list[str], environ: Mapping[str, str] = os.environ) -> WandbConfig:
    """The W&B sink's settings; appends a warning for missing credentials and for each upstream
    variable that is set but not honoured. WANDB_RUN_GROUP and WANDB_JOB_TYPE reach wandb directly."""
    if not has_wandb_credentials(environ):
        warnings.append("W&B is enabled (metrics.enable_wandb) but no credentials were found (WANDB_API_KEY unset, no "
                        "`wandb login` entry in ~/.netrc, WANDB_MODE is not offline): set WANDB_API_KEY or "
                        "WANDB_MODE=offline. Metrics are kept in the run's journal either way (`wandb sync` later).")
    for key, why in NOT_PASSED.items():
        if environ.get(key):
            warnings.append(f"{key} is set but not passed to W&B: {why}")
    return WandbConfig(project=environ.get("WANDB_PROJECT") or UPSTREAM_DEFAULT_PROJECT,
                       entity=environ.get("WANDB_TEAM") or environ.get("WANDB_ENTITY") or None,
                       name=environ.get("WANDB_RUN_NAME") or None, save_dir=save_dir)
