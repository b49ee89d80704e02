"""Megatron's tracker toggles and names: TensorBoard (spec §3), Weights & Biases (§4), MLflow (§5), One-Logger (§6).

TensorBoard: `disable_tensorboard` decides, `tensorboard_dir` only says where; enabled with no directory ->
derived under the run directory, and said so. W&B names left unset are filled by the tracking core from
WANDB_PROJECT / WANDB_RUN_NAME / WANDB_TEAM (WANDB_ENTITY); the run name falls back to the run's own, never to
upstream's "Please specify the wandb experiment name!" crash; missing credentials are a warning. The MLflow
endpoint (MLFLOW_TRACKING_URI, Databricks host and token) is checked by the tracking core's config resolution,
which plan_tracking runs on every rank before training starts."""

from __future__ import annotations

from pathlib import Path

from primus.backends.megatron.schema import wandb_enabled
from primus.tracking.journal.files import TENSORBOARD_DIR, WANDB_DIR
from primus.tracking.plan import Notices
from primus.tracking.settings.config import OneLoggerConfig
from primus.tracking.settings.one_logger_presence import LEGACY, PUBLIC, legacy_line, one_logger_present

ONE_LOGGER_TOGGLE = "enable_one_logger"


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


def one_logger_config(args, notices: Notices) -> OneLoggerConfig | None:
    """The spec's One-Logger options (upstream's own arguments) for Primus's One-Logger, when it is on and
    nv-one-logger is installed; with the legacy package, upstream's own path records instead (said once)."""
    if not getattr(args, "enable_one_logger", False):  # upstream's parser always sets it; a bare namespace may not
        return None
    present = one_logger_present()
    if present == LEGACY:
        notices.info(legacy_line(ONE_LOGGER_TOGGLE))
    if present != PUBLIC:
        return None  # without any: global_vars_patches says so, where upstream would have
    return OneLoggerConfig(
        project=args.one_logger_project,
        run_name=args.one_logger_run_name,
        async_export=bool(args.one_logger_async),
        app_tag_run_name=args.app_tag_run_name,
        app_tag_run_version=args.app_tag_run_version,
        world_size=args.world_size,
        global_batch_size=args.global_batch_size,
        micro_batch_size=args.micro_batch_size,
        seq_length=args.seq_length,
        train_iterations=args.train_iters,
        log_every_n_iterations=max(1, int(args.log_interval or 1)),
        async_save=bool(getattr(args, "async_save", False)),
    )
