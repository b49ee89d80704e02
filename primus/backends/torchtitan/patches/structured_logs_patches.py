"""TorchTitan's structured logs (0.3: ``torchtitan.observability.structured_logger``, one JSONL file per rank under
``<output_dir>/structured_logs/``) go with the run's logs to MLflow (``mlflow_upload_logs``): while that upload is
on, ``init_structured_logger`` is given the run directory as its output folder, so each rank's file lands in
``<run_dir>/structured_logs/``, which the MLflow sink uploads after training, as the profiler's traces are pointed
into ``<run_dir>/traces``. Upstream's console line names where each file is."""

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
