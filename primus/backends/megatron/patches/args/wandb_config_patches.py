"""Weights & Biases toggle and credentials (spec §4).

Names left unset here are filled by the tracking core from WANDB_PROJECT / WANDB_RUN_NAME /
WANDB_TEAM (WANDB_ENTITY); the run name falls back to the run's own, never to upstream's
"Please specify the wandb experiment name!" crash. Missing credentials are a warning, not an error:
offline mode and `wandb login` (netrc) are valid, and the journal keeps every metric either way."""

from __future__ import annotations

from pathlib import Path

from primus.backends.megatron.patches.args.notices import Notices
from primus.tracking.credentials import has_wandb_credentials


def wandb_enabled(args) -> bool:
    if args.disable_wandb is None:
        return bool(args.wandb_project)
    return not args.disable_wandb


def check_wandb(args, notices: Notices) -> bool:
    """Whether W&B is on; warns when it is on without credentials."""
    if not wandb_enabled(args):
        return False
    if not has_wandb_credentials():
        notices.warn("W&B is enabled but no credentials were found (WANDB_API_KEY unset, no `wandb login` "
                     "entry in ~/.netrc, WANDB_MODE is not offline): set WANDB_API_KEY or WANDB_MODE=offline. "
                     "Metrics are kept in the run's journal either way (`wandb sync` later).")
    return True


def wandb_save_dir(args, run_dir: Path) -> Path:
    return Path(args.wandb_save_dir) if args.wandb_save_dir else run_dir / "wandb"
