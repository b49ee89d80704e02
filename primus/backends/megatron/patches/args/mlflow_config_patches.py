"""MLflow toggle and names (spec §5). The endpoint (MLFLOW_TRACKING_URI, Databricks host and token)
is checked by the tracking core's config resolution, which plan_tracking runs on every rank before
training starts."""

from __future__ import annotations

from dataclasses import dataclass

from primus.backends.megatron.patches.args.notices import Notices

_UPLOAD_FLAGS = ("mlflow_upload_traces", "mlflow_upload_logs", "mlflow_upload_performance_metrics",
                 "mlflow_upload_tracelens_report", "mlflow_performance_metrics_across_ranks")


@dataclass(frozen=True)
class MlflowNames:
    experiment_name: str | None
    run_name: str


def mlflow_enabled(args) -> bool:
    return not args.disable_mlflow


def resolve_mlflow(args, run_name: str, notices: Notices) -> MlflowNames | None:
    if not mlflow_enabled(args):
        on = [flag for flag in _UPLOAD_FLAGS if getattr(args, flag)]
        if on:
            notices.info(f"{', '.join(on)} ignored: MLflow is disabled (disable_mlflow: true)")
        return None
    return MlflowNames(experiment_name=args.mlflow_experiment_name, run_name=args.mlflow_run_name or run_name)
