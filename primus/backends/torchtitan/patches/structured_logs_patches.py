"""TorchTitan 0.3's structured logs (one JSONL file per rank) go with the run's logs to MLflow (``mlflow_upload_logs``):
while that upload is on, their folder is the run directory, which the MLflow sink uploads after training."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.upstreams.torchtitan import CONFIGURABLE, TORCHTITAN


@REGISTRY.patch(
    "torchtitan.tracking.structured_logs",
    target="torchtitan.observability.structured_logger",
    upstream=TORCHTITAN,
    versions=CONFIGURABLE,
    backend="torchtitan",
    description="init_structured_logger -> the run directory's structured_logs/ (mlflow_upload_logs)",
)
def _install(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.session import TRACKING

    arguments = Arguments(module.init_structured_logger, "output_dir")

    def init_structured_logger(wrapped, instance, args, kwargs):
        plan = TRACKING.plan
        if plan is None or plan.log_file is None or plan.config is None:
            return wrapped(*args, **kwargs)
        args, kwargs = arguments.replace("output_dir", str(plan.config.run_dir), args, kwargs)
        return wrapped(*args, **kwargs)

    handle.wrap(module, "init_structured_logger", init_structured_logger)
