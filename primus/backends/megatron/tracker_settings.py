"""Megatron's tracker toggles and names: TensorBoard (spec §3), Weights & Biases (§4), MLflow (§5).

TensorBoard: `disable_tensorboard` decides, `tensorboard_dir` only says where; enabled with no directory ->
derived under the run directory, and said so. W&B names left unset are filled by the tracking core from
WANDB_PROJECT / WANDB_RUN_NAME / WANDB_TEAM (WANDB_ENTITY); the run name falls back to the run's own, never to
upstream's "Please specify the wandb experiment name!" crash; missing credentials are a warning. The MLflow
endpoint (MLFLOW_TRACKING_URI, Databricks host and token) is checked by the tracking core's config resolution,
which plan_tracking runs on every rank before training starts."""

from __future__ import annotations

from pathlib import Path

from primus.config.schemas.megatron import wandb_enabled
from primus.tracking.journal.files import TENSORBOARD_DIR, WANDB_DIR
from primus.tracking.plan import Notices


def tensorboard_enabled(args) -> bool:
    if args.disable_tensorboard is None:  # upstream's own rule when the toggle is not given
        return bool(args.tensorboard_dir)
    return not args.disable_tensorboard


def resolve_tensorboard_dir(args, run_dir: Path, notices: Notices) -> Path | None:
    if not tensorboard_enabled(args):
        if args.tensorboard_dir and args.disable_tensorboard:
            notices.info(f"disable_tensorboard is true: no event files are written to {args.tensorboard_dir}")
        return None
    if args.tensorboard_dir:
        return Path(args.tensorboard_dir)
    derived = run_dir / TENSORBOARD_DIR
    notices.info(f"tensorboard_dir not set: TensorBoard events go to {derived}")
    return derived


def check_wandb(args, notices: Notices) -> bool:
    """Whether W&B is on; warns when it is on without credentials."""
    if not wandb_enabled(args):
        return False
    notices.check_wandb_credentials("disable_wandb: false" if args.disable_wandb is False else "wandb_project set")
    return True


def wandb_save_dir(args, run_dir: Path) -> Path:
    return Path(args.wandb_save_dir) if args.wandb_save_dir else run_dir / WANDB_DIR
