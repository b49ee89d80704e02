"""What a MaxText run will track, decided from upstream's built config and Primus's options as soon as the config
exists (``pyconfig.initialize``), before any model is built: a bad setting stops the job there with one message
naming the key and the fix. MaxText's own keys keep their meaning (``enable_tensorboard`` writes where upstream
writes, ``enable_wandb`` with ``wandb_project_name``/``wandb_run_name``); Primus adds ``enable_mlflow`` and the rest.

Run directory: PRIMUS_RUN_DIR when `primus train` set it, else ``<base_output_directory>/<run_name>/primus``,
MaxText's own per-run folder where its checkpoints live, so a job restarted under the same run_name resumes the
same MLflow and W&B runs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.backends.maxtext.primus_options import PrimusOptions
from primus.backends.maxtext.schema import CHECKED_UPSTREAM
from primus.config.schemas.tracking import problems
from primus.tracking import TensorBoardConfig, WandbConfig
from primus.tracking.plan import Destinations, Notices, TrackingPlan, exports_to_prometheus, plan_run
from primus.tracking.settings import otlp_env
from primus.tracking.settings.config import OneLoggerConfig
from primus.tracking.sinks.plugins import requested_sinks

UPSTREAM_TB_QUEUE = 10  # upstream's tensorboardX SummaryWriter(logdir) keeps its default max_queue


def _is_remote(path: str) -> bool:
    return "://" in path  # gs://, s3://: upstream writes there through its own clients; Primus's sinks cannot


def one_logger_shape(config: Any) -> OneLoggerConfig:
    """The run's shape, which One-Logger summarises iterations and checkpoints with (its options: the plan's).
    MaxText logs every step, counting from 0."""
    devices = max(1, int(os.environ.get("WORLD_SIZE", "1")))
    with contextlib.suppress(Exception):  # jax is initialised by the time upstream's config is built
        import jax

        devices = jax.device_count()
    steps = int(getattr(config, "steps", -1))
    return OneLoggerConfig(
        world_size=devices,
        global_batch_size=max(1, int(getattr(config, "global_batch_size_to_train_on", 1))),
        micro_batch_size=int(getattr(config, "micro_batch_size_to_train_on", 0)) or None,
        seq_length=int(getattr(config, "max_target_length", 0)) or None,
        train_iterations=steps if steps > 0 else None,
        async_save=bool(getattr(config, "async_checkpointing", False)),
        step_offset=1,  # its step 0 is the first trained
    )


def plan_tracking(
    config: Any, options: PrimusOptions, explicit_run_dir: Path | None = None, environ: Mapping[str, str] = os.environ
) -> TrackingPlan:
    """``config``: MaxText's built config; raises TrackingPlanError listing every problem."""
    notices = Notices()
    for problem in problems(CHECKED_UPSTREAM, lambda key: getattr(config, key)):
        notices.error(problem)

    def destinations(notices: Notices) -> Destinations | None:
        wanted = (config.enable_tensorboard, config.enable_wandb, options.enable_mlflow, requested_sinks(environ))
        exported = exports_to_prometheus(lambda name: getattr(options, name), environ) or otlp_env.requested(environ)
        if not (any(wanted) or exported):
            return None
        base = str(config.base_output_directory or "")
        if explicit_run_dir is None and _is_remote(base):
            notices.error(
                f"base_output_directory={base!r} is remote, and Primus keeps each run's journal and tracker "
                f"state on a local disk: set PRIMUS_RUN_DIR to a local directory (`primus train` does), or use "
                f"a local base_output_directory"
            )
        tensorboard = None
        if config.enable_tensorboard:
            tb_dir = str(config.tensorboard_dir or "")
            if _is_remote(tb_dir) or not tb_dir:
                notices.error(
                    f"enable_tensorboard=true writes to tensorboard_dir={tb_dir!r}, which is not a local "
                    f"directory: use a local base_output_directory, or enable_tensorboard=false"
                )
            tensorboard = TensorBoardConfig(log_dir=Path(tb_dir) / str(config.run_name), queue_size=UPSTREAM_TB_QUEUE)
        wandb = None
        if config.enable_wandb:
            notices.check_wandb_credentials("enable_wandb=true", environ)
            wandb = WandbConfig(
                project=config.wandb_project_name or None, name=config.wandb_run_name or str(config.run_name)
            )
        return Destinations(
            run_dir=explicit_run_dir or Path(base or "maxtext_output").absolute() / str(config.run_name) / "primus",
            run_name=str(config.run_name),
            tensorboard=tensorboard,
            wandb=wandb,
            one_logger=one_logger_shape(config),
        )

    return plan_run(
        "maxtext",
        lambda name: getattr(options, name),
        destinations,
        notices,
        mlflow=options.enable_mlflow,
        mlflow_off_by="enable_mlflow=false",
        environ=environ,
    )
