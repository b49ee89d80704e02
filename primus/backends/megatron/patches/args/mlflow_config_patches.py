"""MLflow toggle, names and endpoint checks (spec §5). The tracking URI comes from
MLFLOW_TRACKING_URI (else a local sqlite store in the run directory); Databricks needs DATABRICKS_HOST
(and a token or a profile) — checked here, before training starts."""

from __future__ import annotations

import os
from dataclasses import dataclass

from primus.backends.megatron.patches.args.notices import Notices

_UPLOAD_FLAGS = ("mlflow_upload_traces", "mlflow_upload_logs", "mlflow_upload_performance_metrics",
                 "mlflow_upload_tracelens_report")


@dataclass(frozen=True)
class MlflowNames:
    experiment_name: str
    run_name: str


def mlflow_enabled(args) -> bool:
    return not args.disable_mlflow


def resolve_mlflow(args, run_name: str, notices: Notices) -> MlflowNames | None:
    if not mlflow_enabled(args):
        on = [flag for flag in _UPLOAD_FLAGS if getattr(args, flag)]
        if on:
            notices.info(f"{', '.join(on)} ignored: MLflow is disabled (disable_mlflow: true)")
        return None
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri == "databricks" or uri.startswith("databricks://"):
        if not os.environ.get("DATABRICKS_HOST") and not uri.startswith("databricks://"):
            notices.error("MLFLOW_TRACKING_URI is 'databricks' but DATABRICKS_HOST is not set: "
                          "export DATABRICKS_HOST=https://<workspace>.cloud.databricks.com (and DATABRICKS_TOKEN)")
        elif not os.environ.get("DATABRICKS_TOKEN") and not (os.environ.get("DATABRICKS_CLIENT_ID")
                                                              and os.environ.get("DATABRICKS_CLIENT_SECRET")):
            notices.warn("MLflow on Databricks without DATABRICKS_TOKEN (or a service principal): "
                         "relying on a ~/.databrickscfg profile")
    experiment = args.mlflow_experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "primus"
    return MlflowNames(experiment_name=experiment, run_name=args.mlflow_run_name or run_name)
