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

import math
import os
from pathlib import Path
from typing import Any

from primus.backends.torchtitan.metrics_options import PRIMUS_FIELDS
from primus.backends.torchtitan.wandb_settings import wandb_settings
from primus.config.run_directory import CHECKPOINTED_RUN_DIR, choose_run_dir, timestamp
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig
from primus.tracking.config import JOURNAL_RETENTIONS
from primus.tracking.plan import Notices, TrackingPlan
from primus.tracking.plugin_sinks import requested_sinks
from primus.tracking.run_layout import TRACES_DIR, WANDB_DIR, rank_log_file

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
    now: float | None = None,
) -> Path:
    fresh = Path(dump_folder) / metrics.save_tb_folder / timestamp(now or launch_time())
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
) -> TrackingPlan:
    """``metrics``: the parsed metrics config (upstream's fields plus Primus's, see metrics_options);
    ``checkpoint_dir``: where upstream saves checkpoints, None when checkpointing is off;
    ``profiling``: upstream's <profiler_section>.enable_profiling (the trace report has nothing to read
    without it); ``profiler_section``: upstream's name for that section (0.3 ``profiler``, 0.2 ``profiling``).
    Raises TrackingPlanError listing every problem."""
    notices = Notices()
    if metrics.log_freq < 1:
        notices.error(f"metrics.log_freq={metrics.log_freq!r} is invalid: log every N >= 1 steps, e.g. 10")
    exit_deadline = metrics.primus_exit_deadline
    if not _positive_number(exit_deadline):
        notices.error(
            f"metrics.primus_exit_deadline={exit_deadline!r} is invalid: give the seconds to wait at exit "
            f"for the trackers to deliver, a number > 0, e.g. 30"
        )
    retention = metrics.primus_journal_retention
    if retention not in JOURNAL_RETENTIONS:
        notices.error(
            f"metrics.primus_journal_retention={retention!r} is invalid: use one of "
            f"{', '.join(JOURNAL_RETENTIONS)} (keep: the whole journal stays; delivered: closed "
            f"segments every tracker has are deleted)"
        )
    peak = getattr(metrics, "peak_tflops", None)
    if peak is not None and not _positive_number(peak):
        notices.error(
            f"metrics.peak_tflops={peak!r} is invalid: give one device's dense peak TFLOP/s for "
            f"the training dtype, a number > 0 (e.g. 989.4 for an H100 SXM in bf16), or null"
        )
    notices.raise_if_errors()
    mlflow_on = bool(getattr(metrics, "enable_mlflow", False))
    uploads = [name for name in PRIMUS_FIELDS if name.startswith("mlflow_upload_") and getattr(metrics, name, False)]
    if uploads and not mlflow_on:
        notices.info(
            f"{', '.join('metrics.' + u for u in uploads)} ignored: MLflow is off (metrics.enable_mlflow: false)"
        )
        uploads = []
    if "mlflow_upload_tracelens_report" in uploads and not profiling:
        notices.warn(
            f"metrics.mlflow_upload_tracelens_report is on but profiling is off: there will be no "
            f"traces to report on. Set {profiler_section}.enable_profiling: true "
            f"(--{profiler_section}.enable-profiling)."
        )
    tracing = bool({"mlflow_upload_traces", "mlflow_upload_tracelens_report"} & set(uploads))
    across_ranks = bool(getattr(metrics, "mlflow_performance_metrics_across_ranks", False))
    if across_ranks and "mlflow_upload_performance_metrics" not in uploads:
        notices.info(
            "metrics.mlflow_performance_metrics_across_ranks ignored: the perf set is not uploaded "
            "(metrics.enable_mlflow and metrics.mlflow_upload_performance_metrics)"
        )
        across_ranks = False
    if not (metrics.enable_tensorboard or metrics.enable_wandb or mlflow_on or requested_sinks()):
        return TrackingPlan(None, notices)

    run_dir = run_directory(
        metrics, dump_folder=dump_folder, checkpoint_dir=checkpoint_dir, rank=rank, explicit=explicit_run_dir
    )
    # upstream's layout <dump>/<tb>/<time>/ when the run is a fresh one of its own; else <run_dir>/<tb>
    upstream_layout = explicit_run_dir is None and checkpoint_dir is None
    tb_dir = run_dir if upstream_layout else run_dir / metrics.save_tb_folder
    job_dir = run_dir.parent if metrics.save_for_all_ranks else run_dir
    # <checkpoint folder>/primus says nothing of the job: name it after its dump folder
    run_name = getattr(metrics, "mlflow_run_name", None) or (
        Path(dump_folder).absolute().name if job_dir.name == CHECKPOINTED_RUN_DIR else job_dir.name
    )
    config = notices.resolved(
        TrackingConfig(
            run_dir=run_dir,
            experiment_name=getattr(metrics, "mlflow_experiment_name", None),
            run_name=f"{run_name}-rank{rank}" if metrics.save_for_all_ranks else run_name,
            tensorboard=TensorBoardConfig(log_dir=tb_dir, queue_size=UPSTREAM_TB_QUEUE)
            if metrics.enable_tensorboard
            else None,
            wandb=wandb_settings(run_dir / WANDB_DIR, notices) if metrics.enable_wandb else None,
            mlflow=MlflowConfig(
                upload_logs="mlflow_upload_logs" in uploads,
                upload_traces="mlflow_upload_traces" in uploads,
                upload_trace_report="mlflow_upload_tracelens_report" in uploads,
            )
            if mlflow_on
            else None,
            exit_deadline_s=float(exit_deadline),
            journal_retention=retention,
            delivery_group=job_dir if metrics.save_for_all_ranks and local_ranks() > 1 else None,
        )
    )
    return TrackingPlan(
        config,
        notices,
        all_ranks=bool(metrics.save_for_all_ranks),
        log_file=rank_log_file(run_dir, rank) if "mlflow_upload_logs" in uploads else None,
        traces_dir=run_dir / TRACES_DIR if tracing else None,
        perf_metrics="mlflow_upload_performance_metrics" in uploads,
        across_ranks=across_ranks,
        peak_tflops=peak,
    )


def _positive_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
