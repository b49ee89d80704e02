"""Patches on torchtitan.components.metrics: the hub in place of upstream's metric loggers, on the metrics rank
(upstream's rule) or every rank with ``save_for_all_ranks``; the other ranks get upstream's no-op BaseLogger, and
with every tracker off upstream's own builder runs. ``MetricsProcessor.log`` runs on every rank at every log step,
so the across-rank and straggler figures are gathered there, before upstream resets its counters."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.upstreams.torchtitan import CONFIGURABLE, TOML_JOB_CONFIG, TORCHTITAN

RANK_FIGURES = "_primus_rank_figures"  # the MetricsProcessor's RankFigures: across-rank figures or stragglers on


def _tracking_logger(
    module: ModuleType,
    metrics: Any,
    *,
    dump_folder: str,
    metrics_rank: int,
    params: dict[str, Any],
    model: dict[str, Any] | None,
    tag: str | None,
    parallel_dims: Any,
):
    """None when every tracker is off (upstream builds its own logger)."""
    import torch.distributed as dist

    from primus.backends.torchtitan.parallel_tags import layout_tags_of
    from primus.backends.torchtitan.session import TRACKING
    from primus.backends.torchtitan.tracking_plan import plan_tracking
    from primus.tracking.health.stacks import register_for_stacks

    rank = dist.get_rank()
    # a Trainer built without upstream's ConfigManager was not planned at parse time
    plan = TRACKING.plan or plan_tracking(metrics, dump_folder=dump_folder, checkpoint_dir=None, rank=rank)
    if plan.config is None:
        return None
    if not plan.all_ranks and rank != metrics_rank:
        register_for_stacks(plan.config.run_dir)  # the metrics rank's delivery process saves its stacks at a stall
        return module.BaseLogger()
    return TRACKING.start(plan, params=params, model=model, tag=tag, layout=layout_tags_of(parallel_dims))


@REGISTRY.patch(
    "torchtitan.tracking.metric_logger",
    target="torchtitan.components.metrics",
    upstream=TORCHTITAN,
    versions=CONFIGURABLE,
    backend="torchtitan",
    description="MetricsProcessor._build_metric_logger -> the hub behind every tracker",
)
def _install_metric_logger(module: ModuleType, handle: PatchHandle) -> None:
    arguments = Arguments(
        module.MetricsProcessor._build_metric_logger,
        "config",
        "dump_folder",
        "parallel_dims",
        "pp_schedule",
        "config_dict",
        "tag",
        method=True,
    )

    def build_metric_logger(wrapped, instance, args, kwargs):
        params = dict(arguments("config_dict", args, kwargs) or {})
        model = params.pop("model_spec", None)  # the model's layer-by-layer configs: not run parameters
        logger = _tracking_logger(
            module,
            arguments("config", args, kwargs),
            dump_folder=arguments("dump_folder", args, kwargs),
            params=params,
            model=model,
            metrics_rank=module._get_metrics_rank(
                parallel_dims=arguments("parallel_dims", args, kwargs),
                pp_schedule=arguments("pp_schedule", args, kwargs),
            ),
            tag=arguments("tag", args, kwargs),
            parallel_dims=arguments("parallel_dims", args, kwargs),
        )
        return wrapped(*args, **kwargs) if logger is None else logger

    handle.wrap(module.MetricsProcessor, "_build_metric_logger", build_metric_logger)


@REGISTRY.patch(
    "torchtitan.tracking.metric_logger_v0_2",
    target="torchtitan.components.metrics",
    upstream=TORCHTITAN,
    versions=TOML_JOB_CONFIG,
    backend="torchtitan",
    description="_build_metric_logger(job_config, parallel_dims, tag) -> the hub behind every tracker",
)
def _install_metric_logger_function(module: ModuleType, handle: PatchHandle) -> None:
    arguments = Arguments(module._build_metric_logger, "job_config", "parallel_dims", "tag")

    def build_metric_logger(wrapped, instance, args, kwargs):
        job_config, parallel_dims = arguments("job_config", args, kwargs), arguments("parallel_dims", args, kwargs)
        params = job_config.to_dict()
        logger = _tracking_logger(
            module,
            job_config.metrics,
            dump_folder=job_config.job.dump_folder,
            params=params,
            model=params.get("model"),
            metrics_rank=module._get_metrics_rank(parallel_dims, job_config),
            tag=arguments("tag", args, kwargs),
            parallel_dims=parallel_dims,
        )
        return wrapped(*args, **kwargs) if logger is None else logger

    handle.wrap(module, "_build_metric_logger", build_metric_logger)


@REGISTRY.patch(
    "torchtitan.tracking.metrics_processor",
    target="torchtitan.components.metrics",
    upstream=TORCHTITAN,
    backend="torchtitan",
    description="MetricsProcessor.__init__ -> no mfu(%) for an unknown peak (upstream's A100 fallback); "
    "MetricsProcessor.log -> progress/* always, perf/mem/sys metrics (mlflow_upload_performance_metrics)",
)
def _install_metrics_processor(module: ModuleType, handle: PatchHandle) -> None:
    import torch.distributed as dist

    from primus.backends.torchtitan.session import TRACKING
    from primus.backends.torchtitan.tracking_logger import TrackingLogger
    from primus.backends.torchtitan.upstream_mfu import UPSTREAM_MFU, unknown_peak_notice, upstream_peak_is_real
    from primus.log import get_logger
    from primus.tracking.measure.across_ranks import RankFigures

    notices = get_logger("primus.torchtitan")
    log_arguments = Arguments(module.MetricsProcessor.log, "step", method=True)

    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)  # builds the logger, then reads the device's peak
        plan = TRACKING.plan
        stragglers = plan is not None and plan.stragglers and dist.is_initialized() and dist.get_world_size() > 1
        if plan is not None and (plan.across_ranks or stragglers):  # every rank publishes its log steps' figures
            writes = not dist.is_initialized() or dist.get_rank() == 0  # upstream's metrics rank: names the slowest
            setattr(instance, RANK_FIGURES, RankFigures(plan.across_ranks, stragglers, writes))
        device = instance.device_memory_monitor.device_name
        if isinstance(instance.logger, TrackingLogger) and not upstream_peak_is_real(device, instance.gpu_peak_flops):
            instance.logger.dropped = frozenset({UPSTREAM_MFU})
            notices.info("%s", unknown_peak_notice(device))

    def log(wrapped, instance, args, kwargs):
        figures = getattr(instance, RANK_FIGURES, None)
        # on every rank, whether it logs or not; upstream's own time spent loading this rank's batches, before it resets
        ranks = figures.read(sum(instance.data_loading_times)) if figures is not None else None
        logger = instance.logger
        if isinstance(logger, TrackingLogger):  # before upstream resets its counters; added on the hub's thread
            if ranks is not None:
                ranks.journal_hosts(logger.run)
            logger.read_step(
                instance,
                log_arguments("step", args, kwargs),
                {} if ranks is None else ranks.stragglers,
                None if ranks is None else ranks.system,
            )
        return wrapped(*args, **kwargs)

    handle.wrap(module.MetricsProcessor, "__init__", init)
    handle.wrap(module.MetricsProcessor, "log", log)
