"""Patches on torchtitan.components.metrics.MetricsProcessor: the hub in place of upstream's loggers.

``_build_metric_logger`` returns a HubLogger on the metrics rank (upstream's rule: rank 0, or the first
rank of the last pipeline stage) or on every rank with ``save_for_all_ranks``, instead of upstream's
TensorBoard/W&B LoggerContainer; ranks that do not track get upstream's no-op BaseLogger. With every
tracker off, upstream's own method runs unchanged. ``__init__`` leaves upstream's ``mfu(%)`` out of the
trackers when the device's peak is unknown (upstream_mfu). ``log`` adds the perf metric set when it is on."""

from __future__ import annotations

from primus.backends.torchtitan.patches.versions import TORCHTITAN
from primus.patches import REGISTRY


@REGISTRY.patch("torchtitan.tracking.metrics_processor", target="torchtitan.components.metrics",
                upstream=TORCHTITAN, backend="torchtitan",
                description="MetricsProcessor._build_metric_logger -> the hub behind every tracker; "
                            "MetricsProcessor.__init__ -> no mfu(%) for an unknown peak (upstream's A100 fallback); "
                            "MetricsProcessor.log -> perf/mem/sys metrics (mlflow_upload_performance_metrics)")
def _install_metrics_processor(module, handle):
    import torch.distributed as dist

    from primus.backends.torchtitan.hub_logger import HubLogger
    from primus.backends.torchtitan.tracking_plan import plan_tracking
    from primus.backends.torchtitan.tracking_session import current_plan, start_tracking
    from primus.backends.torchtitan.upstream_mfu import UPSTREAM_MFU, unknown_peak_notice, upstream_peak_is_real
    from primus.log import get_logger

    notices = get_logger("primus.torchtitan")

    def build_metric_logger(wrapped, instance, args, kwargs):
        rank = dist.get_rank()
        # a Trainer built without upstream's ConfigManager was not planned at parse time
        plan = current_plan() or plan_tracking(kwargs["config"], dump_folder=kwargs["dump_folder"],
                                               checkpoint_dir=None, rank=rank)
        if plan.config is None:
            return wrapped(*args, **kwargs)
        metrics_rank = module._get_metrics_rank(parallel_dims=kwargs["parallel_dims"],
                                                pp_schedule=kwargs["pp_schedule"])
        if not plan.all_ranks and rank != metrics_rank:
            return module.BaseLogger()
        return start_tracking(plan, config_dict=kwargs.get("config_dict"), tag=kwargs.get("tag"))

    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)  # builds the logger, then reads the device's peak
        device = instance.device_memory_monitor.device_name
        if isinstance(instance.logger, HubLogger) and not upstream_peak_is_real(device, instance.gpu_peak_flops):
            instance.logger.dropped = frozenset({UPSTREAM_MFU})
            notices.info("%s", unknown_peak_notice(device))

    def log(wrapped, instance, args, kwargs):
        logger = instance.logger
        if isinstance(logger, HubLogger) and logger.perf is not None:
            step = args[0] if args else kwargs["step"]
            perf = logger.perf.measure(instance, step)  # before upstream resets its counters
            if len(args) > 4:
                args = (*args[:4], {**(args[4] or {}), **perf})
            else:
                kwargs = {**kwargs, "extra_metrics": {**(kwargs.get("extra_metrics") or {}), **perf}}
        return wrapped(*args, **kwargs)

    handle.wrap(module.MetricsProcessor, "_build_metric_logger", build_metric_logger)
    handle.wrap(module.MetricsProcessor, "__init__", init)
    handle.wrap(module.MetricsProcessor, "log", log)
