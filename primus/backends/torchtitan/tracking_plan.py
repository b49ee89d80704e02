"""What a TorchTitan run will track, decided from the parsed config on every rank before anything is
built: a bad setting (an unreachable Databricks host without a token, an unknown W&B mode) stops every
rank with one message, and only the metrics rank(s) later start the run.

Run directory (journal, run ids, tracker folders), by the rule every launcher shares
(primus.config.run_directory): PRIMUS_RUN_DIR when `primus train` set it; else
``<dump_folder>/<checkpoint.folder>/primus`` when checkpointing is on, so a job restarted from its
checkpoint resumes the same MLflow and W&B runs; else upstream's ``<dump_folder>/<save_tb_folder>/<time>``.
With ``save_for_all_ranks`` each rank has its own ``rank_<r>`` run below it, and the ranks of a node share one
delivery process (TrackingConfig.delivery_group: the job's directory)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from primus.backends.torchtitan.schema import CHECKED_UPSTREAM
from primus.backends.torchtitan.wandb_settings import wandb_settings
from primus.config.run_directory import CHECKPOINTED_RUN_DIR, choose_run_dir, timestamp
from primus.config.schemas.tracking import problems
from primus.tracking import TensorBoardConfig
from primus.tracking.journal.files import WANDB_DIR
from primus.tracking.plan import Destinations, Notices, TrackingPlan, exports_to_prometheus, plan_run
from primus.tracking.settings import otlp_env
from primus.tracking.settings.config import OneLoggerConfig
from primus.tracking.sinks.plugins import requested_sinks

UPSTREAM_TB_QUEUE = 1000  # upstream's SummaryWriter(max_queue=1000)


def launch_time() -> float:
    """When this job started: torchrun's agent process for its workers (the same on every local rank,
    so their derived run directories agree), else this process."""
    import psutil

    process = psutil.Process(os.getppid() if "TORCHELASTIC_RUN_ID" in os.environ else os.getpid())
    return process.create_time()


def local_ranks() -> int:
    """The ranks on this node (torchrun's LOCAL_WORLD_SIZE); one rank keeps its own delivery process."""
    try:
        return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    except ValueError:
        return 1


def run_directory(
    metrics: Any,
    *,
    dump_folder: str,
    checkpoint_dir: Path | None,
    rank: int,
    explicit: Path | None,
) -> Path:
    fresh = Path(dump_folder) / metrics.save_tb_folder / timestamp(launch_time())
    base = choose_run_dir(explicit=explicit, checkpoint_dir=checkpoint_dir, fresh=fresh)
    return base / f"rank_{rank}" if metrics.save_for_all_ranks else base


def plan_tracking(
    metrics: Any,
    *,
    dump_folder: str,
    checkpoint_dir: Path | None,
    rank: int,
    explicit_run_dir: Path | None = None,
    profiling: bool = False,
    profiler_section: str = "profiler",
    one_logger: OneLoggerConfig | None = None,
) -> TrackingPlan:
    """``metrics``: the parsed metrics config (upstream's fields and Primus's); ``checkpoint_dir``: None when
    checkpointing is off; ``profiler_section``: 0.3's ``profiler``, 0.2's ``profiling``. Raises TrackingPlanError
    listing every problem."""
    notices = Notices()
    for problem in problems(CHECKED_UPSTREAM, lambda key: getattr(metrics, key.removeprefix("metrics."))):
        notices.error(problem)

    def destinations(notices: Notices) -> Destinations | None:
        wanted = (metrics.enable_tensorboard, metrics.enable_wandb, metrics.enable_mlflow, requested_sinks())
        exported = exports_to_prometheus(lambda name: getattr(metrics, name)) or otlp_env.requested(os.environ)
        if not (any(wanted) or exported):
            return None
        run_dir = run_directory(
            metrics, dump_folder=dump_folder, checkpoint_dir=checkpoint_dir, rank=rank, explicit=explicit_run_dir
        )
        # upstream's layout <dump>/<tb>/<time>/ when the run is a fresh one of its own; else <run_dir>/<tb>
        upstream_layout = explicit_run_dir is None and checkpoint_dir is None
        job_dir = run_dir.parent if metrics.save_for_all_ranks else run_dir
        return Destinations(
            run_dir=run_dir,
            # <checkpoint folder>/primus says nothing of the job: name it after its dump folder
            run_name=Path(dump_folder).absolute().name if job_dir.name == CHECKPOINTED_RUN_DIR else job_dir.name,
            run_name_suffix=f"-rank{rank}" if metrics.save_for_all_ranks else "",
            tensorboard=TensorBoardConfig(
                log_dir=run_dir if upstream_layout else run_dir / metrics.save_tb_folder, queue_size=UPSTREAM_TB_QUEUE
            )
            if metrics.enable_tensorboard
            else None,
            wandb=wandb_settings(run_dir / WANDB_DIR, notices) if metrics.enable_wandb else None,
            rank=rank,
            delivery_group=job_dir if metrics.save_for_all_ranks and local_ranks() > 1 else None,
            one_logger=one_logger,
        )

    plan = plan_run(
        "torchtitan",
        lambda name: getattr(metrics, name),
        destinations,
        notices,
        mlflow=metrics.enable_mlflow,
        mlflow_off_by="metrics.enable_mlflow: false",
        all_ranks=bool(metrics.save_for_all_ranks),
    )
    mlflow = plan.config.mlflow if plan.config else None
    if mlflow is not None and mlflow.upload_trace_report and not profiling:
        notices.warn(
            f"metrics.mlflow_upload_tracelens_report is on but profiling is off: there will be no "
            f"traces to report on. Set {profiler_section}.enable_profiling: true "
            f"(--{profiler_section}.enable-profiling)."
        )
    return plan
