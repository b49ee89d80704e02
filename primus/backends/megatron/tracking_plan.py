"""What the Megatron run will track, decided from the parsed arguments before training starts.

Computed on every rank inside upstream's validate_args, so a bad setting fails everywhere and early;
only the writer rank (the last, as upstream) turns it into a tracking run.

Run directory (journal, run ids, derived tracker folders), by the rule every launcher shares
(primus.config.run_directory): --primus-run-dir, else PRIMUS_RUN_DIR (`primus train`'s); else <save>/primus, so a job restarted from
its checkpoint resumes the same MLflow/W&B runs; else a fresh timestamped folder under
PRIMUS_OUTPUT_ROOT (default output/megatron): without a checkpoint a restart is a new run."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from primus.backends.megatron.arguments import flag
from primus.backends.megatron.schema import CHECKED_UPSTREAM, mlflow_enabled
from primus.backends.megatron.tracker_settings import (
    check_wandb,
    one_logger_config,
    resolve_tensorboard_dir,
    wandb_save_dir,
)
from primus.config.run_directory import CHECKPOINTED_RUN_DIR, choose_run_dir, given_run_dir, timestamp
from primus.config.schemas.tracking import problems
from primus.tracking import TensorBoardConfig, WandbConfig
from primus.tracking.plan import Destinations, Notices, TrackingPlan, plan_run


def derive_run_dir(args, now: float | None = None) -> Path:
    root = Path(os.environ.get("PRIMUS_OUTPUT_ROOT", "output/megatron"))
    explicit = given_run_dir(args.primus_run_dir)
    return choose_run_dir(explicit=explicit, checkpoint_dir=args.save, fresh=root / timestamp(now))


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
    for problem in problems(CHECKED_UPSTREAM, lambda name: getattr(args, name), flag):
        notices.error(problem)

    def destinations(notices: Notices) -> Destinations:
        run_dir = derive_run_dir(args)
        return Destinations(
            run_dir=run_dir,
            run_name=args.wandb_exp_name or default_run_name(args, run_dir),
            tensorboard=TensorBoardConfig(log_dir=tb_dir, queue_size=args.tensorboard_queue_size)
            if (tb_dir := resolve_tensorboard_dir(args, run_dir, notices))
            else None,
            wandb=WandbConfig(
                project=args.wandb_project,
                entity=args.wandb_entity,
                name=args.wandb_exp_name,
                save_dir=wandb_save_dir(args, run_dir),
            )
            if check_wandb(args, notices)
            else None,
            rank=args.rank,
            one_logger=one_logger_config(args, notices),
        )

    plan = plan_run(
        "megatron",
        lambda name: getattr(args, name),
        destinations,
        notices,
        mlflow=mlflow_enabled(args),
        mlflow_off_by="disable_mlflow: true",
        flag=flag,
    )
    recorded: dict[str, Any] = {"tensorboard_dir": args.tensorboard_dir}
    if plan.config is not None and plan.config.tensorboard is not None:
        args.tensorboard_dir = str(plan.config.tensorboard.log_dir)
        recorded["primus_tensorboard_events_dir"] = str(plan.config.tensorboard.log_dir.absolute())
    if plan.traces_dir is not None:
        # upstream's torch profiler writes <tensorboard_dir>/../torch_profile (training.train, 0.19.2); only the
        # profiler reads args.tensorboard_dir now (the TensorBoard sink has its own log_dir), so anchor it in
        # <run_dir>/traces, which the MLflow sink uploads and reports on after training
        args.tensorboard_dir = str(plan.traces_dir / "profiler")
        recorded["primus_traces_dir"] = str(plan.traces_dir.absolute())
        if getattr(args, "record_memory_history", False):
            # the last rank's snapshot (training.training_log, each log step) goes with the traces
            recorded["memory_snapshot_path"] = args.memory_snapshot_path
            args.memory_snapshot_path = str(plan.traces_dir / "memory" / Path(args.memory_snapshot_path).name)
            Path(args.memory_snapshot_path).parent.mkdir(parents=True, exist_ok=True)
            recorded["primus_memory_snapshot_path"] = str(Path(args.memory_snapshot_path).absolute())
        else:
            _check_profiler(args, plan.notices)
    return dataclasses.replace(plan, recorded_params=recorded)


def _check_profiler(args, notices: Notices) -> None:
    if not (args.profile and args.use_pytorch_profiler):
        on = [name for name in ("mlflow_upload_traces", "mlflow_upload_tracelens_report") if getattr(args, name)]
        notices.warn(
            f"{' and '.join(on)} {'is' if len(on) == 1 else 'are'} on but the torch profiler is off: there "
            "will be no traces. Add --profile --use-pytorch-profiler (steps from --profile-step-start to "
            "--profile-step-end)."
        )
