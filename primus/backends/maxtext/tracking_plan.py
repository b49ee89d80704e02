"""What a MaxText run will track, decided from upstream's built config and Primus's options as soon as the
config exists (``pyconfig.initialize``), before any model is built: a bad setting stops the job there with
one message naming the key and the fix.

MaxText's own keys keep their meaning: ``enable_tensorboard`` (upstream's default: on) writes where upstream
writes, ``<tensorboard_dir>/<run_name>``; ``enable_wandb`` with ``wandb_project_name`` / ``wandb_run_name``;
``log_period`` flushes TensorBoard. Primus adds ``enable_mlflow`` and its ``mlflow_*`` keys.

Run directory (journal, run ids, tracker folders): PRIMUS_RUN_DIR when `primus train` set it, else
``<base_output_directory>/<run_name>/primus``: MaxText's own per-run folder, where its checkpoints live,
so a job restarted under the same run_name resumes the same MLflow and W&B runs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.backends.maxtext.primus_options import PrimusOptions
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig
from primus.tracking.plan import Notices, TrackingPlan
from primus.tracking.plugin_sinks import requested_sinks

UPSTREAM_TB_QUEUE = 10  # upstream's tensorboardX SummaryWriter(logdir) keeps its default max_queue


def _is_remote(path: str) -> bool:
    return "://" in path  # gs://, s3://: upstream writes there through its own clients; Primus's sinks cannot


def plan_tracking(
    config: Any, options: PrimusOptions, explicit_run_dir: Path | None = None, environ: Mapping[str, str] = os.environ
) -> TrackingPlan:
    """``config``: MaxText's built config (``pyconfig.HyperParameters``); raises TrackingPlanError listing
    every problem."""
    notices = Notices()
    log_period = config.log_period
    if not isinstance(log_period, int) or isinstance(log_period, bool) or log_period < 1:
        notices.error(
            f"log_period={log_period!r} is invalid: flush TensorBoard every N >= 1 steps, e.g. log_period=100"
        )
    if options.mlflow_upload_performance_metrics and not options.enable_mlflow:
        notices.info("mlflow_upload_performance_metrics ignored: MLflow is off (enable_mlflow=false)")
    if not (config.enable_tensorboard or config.enable_wandb or options.enable_mlflow or requested_sinks(environ)):
        notices.raise_if_errors()
        return TrackingPlan(None, notices)

    base = str(config.base_output_directory or "")
    if explicit_run_dir is None and _is_remote(base):
        notices.error(
            f"base_output_directory={base!r} is remote, and Primus keeps each run's journal and tracker "
            f"state on a local disk: set PRIMUS_RUN_DIR to a local directory (`primus train` does), or use "
            f"a local base_output_directory"
        )
    run_dir = explicit_run_dir or Path(base or "maxtext_output").absolute() / str(config.run_name) / "primus"
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
    tracking = notices.resolved(
        TrackingConfig(
            run_dir=run_dir,
            experiment_name=options.mlflow_experiment_name,
            run_name=options.mlflow_run_name or str(config.run_name),
            tensorboard=tensorboard,
            wandb=wandb,
            mlflow=MlflowConfig() if options.enable_mlflow else None,
            journal_retention=options.primus_journal_retention,
        ),
        environ,
    )
    return TrackingPlan(
        tracking,
        notices,
        peak_tflops=options.peak_tflops,
        perf_metrics=options.enable_mlflow and options.mlflow_upload_performance_metrics,
    )
