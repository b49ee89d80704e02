"""Patches on maxtext.common.metric_logger.MetricLogger: the hub in place of upstream's TensorBoard and W&B writers,
fed from ``write_metrics`` (upstream's single fan-out) before upstream's console line and NaN/Inf abort; the run
starts in ``__init__`` on the first JAX process and ends in ``flush_metrics_and_cleanup`` (``train_loop``'s
``finally``) with the status of what is in flight. With every tracker off, upstream's methods run unchanged."""

from __future__ import annotations

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments, same_parameters
from primus.tracking import RunStatus
from primus.upstreams.maxtext import MAXTEXT

FEED = "_primus_feed"  # the TrackingMetricWriter on a tracked MetricLogger instance


@REGISTRY.patch(
    "maxtext.tracking.metric_logger",
    target="maxtext.common.metric_logger",
    upstream=MAXTEXT,
    backend="maxtext",
    description="MetricLogger.__init__/write_metrics/write_setup_info_to_tensorboard/"
    "flush_metrics_and_cleanup -> the hub behind TensorBoard, W&B and MLflow",
)
def _install_metric_logger(module, handle):
    import sys

    import jax

    from primus.backends.maxtext.session import TRACKING, status_for
    from primus.backends.maxtext.tracking_metric_writer import StepScalarsPerf, TrackingMetricWriter, UpstreamWritersOff
    from primus.tracking.health.stacks import register_for_stacks

    cls = module.MetricLogger
    init_arguments = Arguments(cls.__init__, "config", method=True)
    same_parameters(cls.write_metrics, TrackingMetricWriter.write, method=True)  # handed on as they come
    setup_arguments = Arguments(cls.write_setup_info_to_tensorboard, "params", method=True)

    def init(wrapped, instance, args, kwargs):
        config = init_arguments("config", args, kwargs)
        plan = TRACKING.plan_for(config)
        if plan.config is None:
            return wrapped(*args, **kwargs)
        if jax.process_index() != 0:  # the writer's delivery process saves this process's stacks at a stall
            register_for_stacks(plan.config.run_dir)
            return wrapped(*args, **kwargs)
        args, kwargs = init_arguments.replace("config", UpstreamWritersOff(config), args, kwargs)
        wrapped(*args, **kwargs)
        line = f"To see full metrics 'tensorboard --logdir={config.tensorboard_dir}'"  # upstream's, at its flushes
        announce = module.max_logging.log  # upstream's own line where its own flush would print it
        on_flush = (lambda step: announce(line)) if config.enable_tensorboard else None
        setattr(instance, FEED, TRACKING.start(plan, config, on_flush))

    def write_metrics(wrapped, instance, args, kwargs):
        feed = getattr(instance, FEED, None)
        if feed is not None:
            feed.write(*args, **kwargs)
        return wrapped(*args, **kwargs)

    def write_setup_info(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)  # computes the per-device TFLOPs and tokens of one step
        feed = getattr(instance, FEED, None)
        if feed is None:
            return result
        config = instance.config  # upstream's, seen through UpstreamWritersOff
        params = setup_arguments("params", args, kwargs)
        feed.write_texts(
            {"num_model_parameters": module.max_utils.calculate_num_params_from_pytree(params)}, tensorboard_only=False
        )
        if feed.tensorboard:  # upstream's config dump; every tracker has the config as run params
            feed.write_texts(config.get_keys(), tensorboard_only=True)
        if feed.perf_metrics:
            feed.perf = StepScalarsPerf(
                per_device_tokens=instance.metadata[module.MetadataKey.PER_DEVICE_TOKENS],
                per_device_tflops=instance.metadata[module.MetadataKey.PER_DEVICE_TFLOPS],
                devices=jax.devices(),
                dtype=str(config.dtype),
                local_device=jax.local_devices()[0],
                peak_tflops=feed.peak_tflops,
            )
        return result

    def flush_and_cleanup(wrapped, instance, args, kwargs):
        feed = getattr(instance, FEED, None)
        if feed is None:
            return wrapped(*args, **kwargs)
        in_flight = sys.exc_info()[1]  # called from train_loop's `finally`
        try:
            result = wrapped(*args, **kwargs)  # writes the last, deferred step through write_metrics
        except BaseException:
            feed.finish(RunStatus.FAILED)
            raise
        feed.finish(status_for(in_flight))
        return result

    handle.wrap(cls, "__init__", init)
    handle.wrap(cls, "write_metrics", write_metrics)
    handle.wrap(cls, "write_setup_info_to_tensorboard", write_setup_info)
    handle.wrap(cls, "flush_metrics_and_cleanup", flush_and_cleanup)


@REGISTRY.patch(
    "maxtext.tracking.evaluation",
    target="maxtext.common.metric_logger",
    upstream=MAXTEXT,
    backend="maxtext",
    description="MetricLogger.reset_eval_metrics: each evaluation journaled as an expected pause in steps (no stall "
    "alert; its time is badput/eval_s)",
)
def _install_evaluation(module, handle):
    """Upstream's train loop calls ``reset_eval_metrics`` as each evaluation begins (the pre-training loop and GRPO's
    alike); the next training step's log ends it. The last training step's metrics are still buffered then (upstream
    writes a step once the next is handed over): their log, during the evaluation, does not end it."""
    from primus.backends.maxtext.session import TRACKING

    def reset_eval_metrics(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if getattr(instance, FEED, None) is not None:
            buffered = [step for kind, step, *_ in instance.buffered_metrics if kind == "train"]
            TRACKING.checkpoints.evaluating(True, after_step=int(buffered[-1]) if buffered else None)
        return result

    handle.wrap(module.MetricLogger, "reset_eval_metrics", reset_eval_metrics)
