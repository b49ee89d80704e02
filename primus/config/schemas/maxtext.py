"""MaxText schema: the logging cadence, the tracker switches and the keys Primus reads to place a run.
MaxText's other keys cannot be listed without MaxText installed (it has its own environment): they pass
through to MaxText's own config loader, which checks them."""

from __future__ import annotations

from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import journal_retention_param, mlflow_params

PARAMS = [
    Param("log_period", "int", ge=1,
          help="Train steps between TensorBoard flushes (also GCS metric uploads and managed-profiler updates)."),
    Param("enable_tensorboard", "bool",
          help="Enable TensorBoard logging (<base_output_directory>/<run_name>/tensorboard/<run_name>)."),
    Param("enable_wandb", "bool", help="Enable W&B logging."),
    Param("wandb_project_name", "str", help="W&B project."),
    Param("wandb_run_name", "str", help="W&B run name (default: run_name)."),
    Param("run_name", "str", help="MaxText's run name (default under primus train: the run directory's name)."),
    Param("base_output_directory", "str", help="Where MaxText writes its run folder (default under primus train: "
                                               "the run directory's parent)."),
    Param("enable_mlflow", "bool", primus=True, help="Enable MLflow logging."),
    *mlflow_params(),
    journal_retention_param(),
]


def schema() -> Schema:
    return Schema("maxtext parameter", PARAMS, open=True)
