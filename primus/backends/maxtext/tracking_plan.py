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

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from primus.backends.maxtext.primus_options import PrimusOptions
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, TrackingConfigError, WandbConfig
from primus.tracking.credentials import has_wandb_credentials
from primus.tracking.plugin_sinks import requested_sinks

UPSTREAM_TB_QUEUE = 10  # upstream's tensorboardX SummaryWriter(logdir) keeps its default max_queue


class TrackingPlanError(ValueError):
    """A tracking setting that cannot work; raised before training starts, naming the key and the fix."""


@dataclass(frozen=True)
class TrackingPlan:
    config: TrackingConfig | None  # None: every tracker is off and upstream's behaviour is unchanged
    log_period: int  # TensorBoard is flushed every log_period train steps, as upstream does
    perf_metrics: bool  # mlflow_upload_performance_metrics with MLflow on
    warnings: tuple[str, ...] = ()
    infos: tuple[str, ...] = ()
    peak_tflops: float | None = None  # the run's peak_tflops option, over the built-in table

    def for_run(self, params: Mapping[str, Any], tags: Mapping[str, str]) -> TrackingConfig:
        return dataclasses.replace(self.config, params=dict(params), tags=dict(tags))


def _is_remote(path: str) -> bool:
    return "://" in path  # gs://, s3://: upstream writes there through its own clients; Primus's sinks cannot


def run_directory(config: Any, explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    base = str(config.base_output_directory or "")
    if _is_remote(base):
        raise TrackingPlanError(f"base_output_directory={base!r} is remote, and Primus keeps each run's journal "
                                f"and tracker state on a local disk: set PRIMUS_RUN_DIR to a local directory "
                                f"(`primus train` does), or use a local base_output_directory")
    return Path(base or "maxtext_output").absolute() / str(config.run_name) / "primus"


def plan_tracking(config: Any, options: PrimusOptions, explicit_run_dir: Path | None = None,
                  environ: Mapping[str, str] = os.environ) -> TrackingPlan:
    """``config``: MaxText's built config (``pyconfig.HyperParameters``); raises TrackingPlanError."""
    log_period = config.log_period
    if not isinstance(log_period, int) or isinstance(log_period, bool) or log_period < 1:
        raise TrackingPlanError(f"log_period={log_period!r} is invalid: flush TensorBoard every N >= 1 steps, "
                                f"e.g. log_period=100")
    infos, warnings = [], []
    if options.mlflow_upload_performance_metrics and not options.enable_mlflow:
        infos.append("mlflow_upload_performance_metrics ignored: MLflow is off (enable_mlflow=false)")
    if not (config.enable_tensorboard or config.enable_wandb or options.enable_mlflow or requested_sinks(environ)):
        return TrackingPlan(None, log_period, False, (), tuple(infos))

    run_dir = run_directory(config, explicit_run_dir)
    tensorboard = None
    if config.enable_tensorboard:
        tb_dir = str(config.tensorboard_dir or "")
        if _is_remote(tb_dir) or not tb_dir:
            raise TrackingPlanError(f"enable_tensorboard=true writes to tensorboard_dir={tb_dir!r}, which is not a "
                                    f"local directory: use a local base_output_directory, or enable_tensorboard=false")
        tensorboard = TensorBoardConfig(log_dir=Path(tb_dir) / str(config.run_name), queue_size=UPSTREAM_TB_QUEUE)
    wandb = None
    if config.enable_wandb:
        if not has_wandb_credentials(environ):
            warnings.append("W&B is enabled (enable_wandb=true) but no credentials were found (WANDB_API_KEY unset, "
                            "no `wandb login` entry in ~/.netrc, WANDB_MODE is not offline): set WANDB_API_KEY or "
                            "WANDB_MODE=offline. Metrics are kept in the run's journal either way.")
        wandb = WandbConfig(project=config.wandb_project_name or None,
                            name=config.wandb_run_name or str(config.run_name))
    tracking = TrackingConfig(
        run_dir=run_dir,
        experiment_name=options.mlflow_experiment_name,
        run_name=options.mlflow_run_name or str(config.run_name),
        tensorboard=tensorboard,
        wandb=wandb,
        mlflow=MlflowConfig() if options.enable_mlflow else None,
        journal_retention=options.primus_journal_retention,
    )
    try:
        tracking = tracking.resolve(environ)
    except TrackingConfigError as e:
        raise TrackingPlanError(f"MaxText tracking settings: {e}") from e
    perf = options.enable_mlflow and options.mlflow_upload_performance_metrics
    return TrackingPlan(tracking, log_period, perf, tuple(warnings), tuple(infos), options.peak_tflops)
