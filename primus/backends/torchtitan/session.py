"""One process's tracking for TorchTitan, the one object its patches hold (``TRACKING``): the plan decided when the
config is parsed (kept for the metrics processor, built later inside the Trainer), the run started on the metrics
rank(s), and the checkpoint journal the checkpoint patches call (attached to that run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from primus.backends.torchtitan.tracking_plan import plan_tracking
from primus.config.run_directory import given_run_dir
from primus.log import get_logger
from primus.log_capture import capture_console, stop_console_capture
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.plan import TrackingPlan
from primus.tracking.settings.config import OneLoggerConfig

log = get_logger("primus.torchtitan")


class TorchTitanTracking:
    def __init__(self) -> None:
        self.plan: TrackingPlan | None = None  # decided at parse time; None: a Trainer built without ConfigManager
        self.checkpoints = CheckpointJournal()

    def prepare(self, config: Any, rank: int, *, dump_folder: str, profiler_section: str) -> TrackingPlan:
        """Plan from upstream's parsed config (raises TrackingPlanError), say what was decided once, and point
        upstream's log and profiler output where the MLflow upload takes it from."""
        checkpoint_dir = Path(dump_folder) / config.checkpoint.folder if config.checkpoint.enable else None
        profiler = getattr(config, profiler_section)
        plan = plan_tracking(
            config.metrics,
            dump_folder=dump_folder,
            checkpoint_dir=checkpoint_dir,
            rank=rank,
            explicit_run_dir=given_run_dir(),
            profiling=profiler.enable_profiling,
            profiler_section=profiler_section,
            one_logger=one_logger_shape(config),
        )
        if rank == 0:
            plan.notices.emit(log)
        if plan.traces_dir is not None:
            profiler.save_traces_folder = str(plan.traces_dir)  # absolute: joined to dump_folder, it stays
        if plan.log_file is not None:
            capture_console(plan.log_file)
        self.plan = plan
        return plan

    def start(
        self,
        plan: TrackingPlan,
        *,
        params: dict[str, Any],
        model: dict[str, Any] | None,
        tag: str | None,
        layout: dict[str, str] | None = None,
    ):
        """Start the run on this rank and return the logger upstream's processor will use. ``model``: the dict
        that names the model (its ``name`` and ``flavor`` become tags)."""
        from primus.backends.torchtitan.step_perf import ProcessorPerf
        from primus.backends.torchtitan.step_progress import ProcessorProgress
        from primus.backends.torchtitan.tracking_logger import TrackingLogger

        tags = dict(layout or {})
        tags.update({f"torchtitan.{k}": str(v) for k in ("name", "flavor") if (v := (model or {}).get(k)) is not None})
        run = plan.start(params, tags, self.checkpoints)
        perf = None
        if plan.perf_metrics:
            perf = ProcessorPerf(
                str(params.get("training", {}).get("mixed_precision_param", "bfloat16")),
                log_freq=int(params.get("metrics", {}).get("log_freq", 1)),
                peak_tflops=plan.peak_tflops,
            )
        return TrackingLogger(
            run, tag=tag, perf=perf, progress=ProcessorProgress(params["training"], params.get("parallelism"))
        )

    def forget_plan(self) -> None:
        """Tests and in-process re-runs: the next parse plans afresh."""
        self.plan = None
        stop_console_capture()


def one_logger_shape(config: Any) -> OneLoggerConfig:
    """The run's shape, which One-Logger summarises iterations and checkpoints with (its options: the plan's)."""
    training, parallel = config.training, getattr(config, "parallelism", None)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(getattr(training, "local_batch_size", getattr(training, "batch_size", 1)))
    model_parallel = 1
    for degree in ("tensor_parallel_degree", "pipeline_parallel_degree", "context_parallel_degree"):
        model_parallel *= max(1, int(getattr(parallel, degree, 1) or 1))
    given = int(getattr(training, "global_batch_size", -1) or -1)
    return OneLoggerConfig(
        world_size=world,
        global_batch_size=given if given > 0 else local * max(1, world // model_parallel),  # upstream's -1: per rank
        micro_batch_size=local,
        seq_length=int(training.seq_len),
        train_iterations=int(training.steps),
        log_every_n_iterations=max(1, int(config.metrics.log_freq)),
        async_save=str(getattr(config.checkpoint, "async_mode", "disabled")) != "disabled",
    )


TRACKING = TorchTitanTracking()  # module-level: upstream's hooks, wrapped at import, have no other way to it
