"""What the Megatron run will track, decided from the parsed arguments before training starts.

Computed on every rank inside upstream's validate_args, so a bad setting fails everywhere and early;
only the writer rank (the last, as upstream) turns it into a tracking run."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from primus.backends.megatron.patches.args.mlflow_config_patches import resolve_mlflow
from primus.backends.megatron.patches.args.notices import Notices
from primus.backends.megatron.patches.args.tensorboard_config_patches import resolve_tensorboard_dir
from primus.backends.megatron.patches.args.wandb_config_patches import check_wandb, wandb_save_dir
from primus.backends.megatron.training.run_directory import default_run_name, derive_run_dir
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, TrackingConfigError, WandbConfig
from primus.tracking.plugin_sinks import requested_sinks


@dataclass(frozen=True)
class TrackingPlan:
    config: TrackingConfig  # params and tags are added on the writer rank
    notices: Notices
    log_file: Path | None = None  # mlflow_upload_logs: this rank's console, copied there (every rank)
    across_ranks: bool = False  # memory/utilisation gathered over ranks (mlflow_performance_metrics_across_ranks)
    # params recorded instead of args' own: the user's tensorboard_dir (args' is rewritten for upstream's
    # profiler), and the folders Primus chose, under their own names
    recorded_params: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def any_tracker(self) -> bool:
        return bool(self.config.tensorboard or self.config.wandb or self.config.mlflow or self.config.plugin_sinks)

    def tracking_config(self, params: dict[str, Any], tags: dict[str, str]) -> TrackingConfig:
        return dataclasses.replace(self.config, params=params, tags=tags)


def plan_tracking(args) -> TrackingPlan:
    """Validate the Primus arguments and decide the trackers; raises PrimusArgumentError listing
    every problem. Sets args.tensorboard_dir to the derived folder when TensorBoard is on, so upstream's
    profiler traces (written beside it) land in the run directory too, under traces/ when MLflow uploads them;
    the trackers record the user's tensorboard_dir and these folders under their own names."""
    notices = Notices()
    _check_ranges(args, notices)
    run_dir = derive_run_dir(args)
    run_name = args.mlflow_run_name or args.wandb_exp_name or default_run_name(args, run_dir)
    tensorboard_dir = resolve_tensorboard_dir(args, run_dir, notices)
    mlflow = resolve_mlflow(args, run_name, notices)
    config = TrackingConfig(
        run_dir=run_dir,
        experiment_name=mlflow.experiment_name if mlflow else None,
        run_name=run_name,
        tensorboard=TensorBoardConfig(log_dir=tensorboard_dir, queue_size=args.tensorboard_queue_size)
        if tensorboard_dir else None,
        wandb=WandbConfig(project=args.wandb_project, entity=args.wandb_entity, name=args.wandb_exp_name,
                          save_dir=wandb_save_dir(args, run_dir)) if check_wandb(args, notices) else None,
        mlflow=MlflowConfig(experiment_name=mlflow.experiment_name, run_name=mlflow.run_name,
                            upload_logs=args.mlflow_upload_logs, upload_traces=args.mlflow_upload_traces,
                            upload_trace_report=args.mlflow_upload_tracelens_report)
        if mlflow else None,
        exit_deadline_s=args.primus_exit_deadline,
        plugin_sinks=requested_sinks(),
        journal_retention=args.primus_journal_retention,
    )
    if not notices.errors:
        try:
            config.resolve()  # the tracking core's own checks (Databricks host/token, W&B mode, ...)
        except TrackingConfigError as e:
            notices.error(str(e))
    notices.raise_if_errors()
    recorded: dict[str, Any] = {"tensorboard_dir": args.tensorboard_dir}
    if tensorboard_dir is not None:
        args.tensorboard_dir = str(tensorboard_dir)
        recorded["primus_tensorboard_events_dir"] = str(tensorboard_dir.absolute())
    if mlflow and (args.mlflow_upload_traces or args.mlflow_upload_tracelens_report):
        # upstream's torch profiler writes <tensorboard_dir>/../torch_profile (training.train, 0.19.2); only the
        # profiler reads args.tensorboard_dir now (the TensorBoard sink has its own log_dir), so anchor it in
        # <run_dir>/traces, which the MLflow sink uploads and reports on after training
        args.tensorboard_dir = str(run_dir / "traces" / "profiler")
        recorded["primus_traces_dir"] = str((run_dir / "traces").absolute())
        _check_profiler(args, notices)
    log_file = run_dir / "logs" / f"rank_{args.rank}.log" if mlflow and args.mlflow_upload_logs else None
    across_ranks = bool(mlflow) and args.mlflow_performance_metrics_across_ranks
    if across_ranks and not args.mlflow_upload_performance_metrics:
        notices.info("mlflow_performance_metrics_across_ranks ignored: mlflow_upload_performance_metrics is off")
        across_ranks = False
    return TrackingPlan(config, notices, log_file, across_ranks, recorded)


def _check_profiler(args, notices: Notices) -> None:
    if not (args.profile and args.use_pytorch_profiler):
        on = [flag for flag in ("mlflow_upload_traces", "mlflow_upload_tracelens_report") if getattr(args, flag)]
        notices.warn(f"{' and '.join(on)} {'is' if len(on) == 1 else 'are'} on but the torch profiler is off: there will be no traces. Add --profile "
                     "--use-pytorch-profiler (steps from --profile-step-start to --profile-step-end).")


def _check_ranges(args, notices: Notices) -> None:
    minimums = {"log_avg_skip_iterations": 0, "log_avg_reset_interval": 1, "tensorboard_log_interval": 1}
    for key, minimum in minimums.items():
        value = getattr(args, key)
        if value < minimum:
            notices.error(f"{key}={value!r} is invalid: {_flag(key)} must be >= {minimum}")
    if args.peak_tflops is not None and not (math.isfinite(args.peak_tflops) and args.peak_tflops > 0):
        notices.error(f"peak_tflops={args.peak_tflops!r} is invalid: {_flag('peak_tflops')} is one device's dense "
                      f"peak TFLOP/s for the training dtype, a number > 0 (e.g. 989.4 for an H100 SXM in bf16)")
    if not args.primus_exit_deadline > 0:
        notices.error(f"primus_exit_deadline={args.primus_exit_deadline!r} is invalid: "
                      f"{_flag('primus_exit_deadline')} must be > 0 seconds")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")
