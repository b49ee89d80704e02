"""Weights & Biases toggle, names and credentials (spec §4).

Names come from the arguments, else from WANDB_PROJECT / WANDB_RUN_NAME / WANDB_TEAM (WANDB_ENTITY),
else are derived — never upstream's "Please specify the wandb experiment name!" crash.
Missing credentials are a warning, not an error: offline mode and `wandb login` (netrc) are valid."""

from __future__ import annotations

import netrc
import os
from dataclasses import dataclass
from pathlib import Path

from primus.backends.megatron.patches.args.notices import Notices

DEFAULT_PROJECT = "primus"


@dataclass(frozen=True)
class WandbNames:
    project: str
    name: str
    entity: str | None
    save_dir: Path


def wandb_enabled(args) -> bool:
    if args.disable_wandb is None:
        return bool(args.wandb_project)
    return not args.disable_wandb


def resolve_wandb(args, run_dir: Path, run_name: str, notices: Notices) -> WandbNames | None:
    if not wandb_enabled(args):
        return None
    project = args.wandb_project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
    if not (args.wandb_project or os.environ.get("WANDB_PROJECT")):
        notices.info(f"wandb_project not set (nor WANDB_PROJECT): using project {project!r}")
    name = args.wandb_exp_name or os.environ.get("WANDB_RUN_NAME") or run_name
    entity = args.wandb_entity or os.environ.get("WANDB_TEAM") or os.environ.get("WANDB_ENTITY") or None
    save_dir = Path(args.wandb_save_dir) if args.wandb_save_dir else run_dir / "wandb"
    if not has_wandb_credentials():
        notices.warn("W&B is enabled but no credentials were found (WANDB_API_KEY unset, no `wandb login` "
                     "entry in ~/.netrc, WANDB_MODE is not offline): W&B will fail to sync; set WANDB_API_KEY "
                     "or WANDB_MODE=offline. Metrics are kept in the run's journal either way.")
    return WandbNames(project=project, name=name, entity=entity, save_dir=save_dir)


def has_wandb_credentials() -> bool:
    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "dryrun", "disabled"):
        return True
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        return netrc.netrc(os.environ.get("NETRC")).authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False
