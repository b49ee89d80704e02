"""W&B settings for TorchTitan (spec §7). Upstream's ``WandBLogger`` reads them from the environment;
W&B is now a sink of the hub, which reads the same variables: WANDB_PROJECT (upstream's default
"torchtitan"), WANDB_RUN_NAME, WANDB_TEAM (the entity), WANDB_RUN_ID, WANDB_RUN_NOTES, WANDB_RUN_TAGS,
WANDB_RUN_JOB_TYPE, WANDB_RESUME_FROM and WANDB_FORK_FROM. Missing credentials are a warning, as for
Megatron: offline mode and `wandb login` are valid and the journal keeps every metric either way."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from primus.tracking import WandbConfig
from primus.tracking.plan import Notices

UPSTREAM_DEFAULT_PROJECT = "torchtitan"


def wandb_settings(save_dir: Path, notices: Notices, environ: Mapping[str, str] = os.environ) -> WandbConfig:
    """Warns of missing credentials. WANDB_RUN_GROUP reaches wandb directly (wandb reads it itself)."""
    notices.check_wandb_credentials("metrics.enable_wandb", environ)
    return WandbConfig(
        project=environ.get("WANDB_PROJECT") or UPSTREAM_DEFAULT_PROJECT,
        entity=environ.get("WANDB_TEAM") or environ.get("WANDB_ENTITY") or None,
        name=environ.get("WANDB_RUN_NAME") or None,
        save_dir=save_dir,
        run_id=environ.get("WANDB_RUN_ID") or None,
        notes=environ.get("WANDB_RUN_NOTES") or None,
        tags=_tags(environ.get("WANDB_RUN_TAGS")),
        job_type=environ.get("WANDB_RUN_JOB_TYPE") or None,
        resume_from=environ.get("WANDB_RESUME_FROM") or None,
        fork_from=environ.get("WANDB_FORK_FROM") or None,
    )


def _tags(text: str | None) -> tuple[str, ...] | None:
    """Comma-separated, as wandb reads its own WANDB_TAGS (upstream hands wandb.init the raw string, which
    wandb turns into one tag per character)."""
    tags = tuple(t.strip() for t in (text or "").split(",") if t.strip())
    return tags or None
