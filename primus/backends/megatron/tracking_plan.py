"""What the Megatron run will track, decided from the parsed arguments before training starts.

Computed on every rank inside upstream's validate_args, so a bad setting fails everywhere and early;
only the writer rank (the last, as upstream) turns it into a tracking run.

Run directory (journal, run ids, derived tracker folders), by the rule every launcher shares
(primus.config.run_directory): explicit --primus-run-dir; else <save>/primus, so a job restarted from
its checkpoint resumes the same MLflow/W&B runs; else a fresh timestamped folder under
PRIMUS_OUTPUT_ROOT (default output/megatron): without a checkpoint a restart is a new run."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from primus.backends.megatron.tracker_settings import (
    check_wandb,
    resolve_mlflow,
    resolve_tensorboard_dir,
    wandb_save_dir,
)
from primus.config.run_directory import CHECKPOINTED_RUN_DIR, choose_run_dir, timestamp
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig
from primus.tracking.plan import Notices, TrackingPlan
from primus.tracking.plugin_sinks import requested_sinks
from primus.tracking.run_layout import TRACES_DIR, rank_log_file


def derive_run_dir(args, now: float | None = None) -> Path:
    root = Path(os.environ.get("PRIMUS_OUTPUT_ROOT", "output/megatron"))
    return choose_run_dir(explicit=args.primus_run_dir, checkpoint_dir=args.save, fresh=root / timestamp(now))


def default_run_name(args, run_dir: Path) -> str:
    """The run's name when none is given: the checkpoint folder's name for <save>/primus (derived here,
    or chosen by `primus train`)."""
    if args.save and run_dir == Path(args.save) / CHECKPOINTED_RUN_DIR:
        return Path(args.save).resolve().name
    return run_dir.name


def plan_tracking(args) -> TrackingPlan:
    """Validate the Primus arguments and decide the trackers; raises TrackingPlanError listing
    every problem. Sets args.tensorboard_dir to the derived folder when TensorBoard is on, so upstream's
    profiler traces (written beside it) land in the run directory too, under traces/ when MLflow uploads them;
    the trackers record the user's tensorboard_dir and these folders under their own names."""
    notices = Notices()
    _check_ranges(args, notices)
    run_dir = derive_run_dir(args)
    run_name = args.mlflow_run_name or args.wandb_exp_name or default_run_name(args, run_dir)
    tensorboard_dir = resolve_tensorboard_dir(args, run_dir, notices)
    mlflow = resolve_mlflow(args, run_name, notices)
    config = notices.resolved(
        TrackingConfig(
            run_dir=run_dir,
            experiment_name=mlflow.experiment_name if mlflow else None,
            run_name=run_name,
            tensorboard=TensorBoardConfig(log_dir=tensorboard_dir, queue_size=args.tensorboard_queue_size)
            if tensorboard_dir
            else None,
            wandb=WandbConfig(
                project=args.wandb_project,
                entity=args.wandb_entity,
                name=args.wandb_exp_name,
                save_dir=wandb_save_dir(args, run_dir),
            )
            if check_wandb(args, notices)
            else None,
            mlflow=MlflowConfig(
                experiment_name=mlflow.experiment_name,
                run_name=mlflow.run_name,
                upload_logs=args.mlflow_upload_logs,
                upload_traces=args.mlflow_upload_traces,
                upload_trace_report=args.mlflow_upload_tracelens_report,
            )
            if mlflow
            else None,
            exit_deadline_s=args.primus_exit_deadline,
            plugin_sinks=requested_sinks(),
            journal_retention=args.primus_journal_retention,
        )
    )
    recorded: dict[str, Any] = {"tensorboard_dir": args.tensorboard_dir}
    if tensorboard_dir is not None:
        args.tensorboard_dir = str(tensorboard_dir)
        recorded["primus_tensorboard_events_dir"] = str(tensorboard_dir.absolute())
    traces_dir = None
    if mlflow and (args.mlflow_upload_traces or args.mlflow_upload_tracelens_report):
        # upstream's torch profiler writes <tensorboard_dir>/../torch_profile (training.train, 0.19.2); only the
        # profiler reads args.tensorboard_dir now (the TensorBoard sink has its own log_dir), so anchor it in
        # <run_dir>/traces, which the MLflow sink uploads and reports on after training
        traces_dir = run_dir / TRACES_DIR
        args.tensorboard_dir = str(traces_dir / "profiler")
        recorded["primus_traces_dir"] = str(traces_dir.absolute())
        _check_profiler(args, notices)
    across_ranks = bool(mlflow) and args.mlflow_performance_metrics_across_ranks
    if across_ranks and not args.mlflow_upload_performance_metrics:
        notices.info("mlflow_performance_metrics_across_ranks ignored: mlflow_upload_performance_metrics is off")
        across_ranks = False
    tracked = config.tensorboard or config.wandb or config.mlflow or config.plugin_sinks
    return TrackingPlan(
        config if tracked else None,
        notices,
        log_file=rank_log_file(run_dir, args.rank) if mlflow and args.mlflow_upload_logs else None,
        traces_dir=traces_dir,
        perf_metrics=bool(mlflow) and args.mlflow_upload_performance_metrics,
        across_ranks=across_ranks,
        peak_tflops=args.peak_tflops,
        recorded_params=recorded,
    )


def _check_profiler(args, notices: Notices) -> None:
    if not (args.profile and args.use_pytorch_profiler):
        on = [flag for flag in ("mlflow_upload_traces", "mlflow_upload_tracelens_report") if getattr(args, flag)]
        notices.warn(
            f"{' and '.join(on)} {'is' if len(on) == 1 else 'are'} on but the torch profiler is off: there "
            "will be no traces. Add --profile --use-pytorch-profiler (steps from --profile-step-start to "
            "--profile-step-end)."
        )


def _check_ranges(args, notices: Notices) -> None:
    minimums = {"log_avg_skip_iterations": 0, "log_avg_reset_interval": 1, "tensorboard_log_interval": 1}
    for key, minimum in minimums.items():
        value = getattr(args, key)
        if value < minimum:
            notices.error(f"{key}={value!r} is invalid: {_flag(key)} must be >= {minimum}")
    if args.peak_tflops is not None and not (math.isfinite(args.peak_tflops) and args.peak_tflops > 0):
        notices.error(
            f"peak_tflops={args.peak_tflops!r} is invalid: {_flag('peak_tflops')} is one device's dense "
            f"peak TFLOP/s for the training dtype, a number > 0 (e.g. 989.4 for an H100 SXM in bf16)"
        )
    if not args.primus_exit_deadline > 0:
        notices.error(
            f"primus_exit_deadline={args.primus_exit_deadline!r} is invalid: "
            f"{_flag('primus_exit_deadline')} must be > 0 seconds"
        )


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")
