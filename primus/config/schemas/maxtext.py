"""MaxText schema: the logging cadence and tracker switches. MaxText is not installed here, so its
other keys cannot be listed: they pass through to MaxText's own config loader, which checks them."""

from __future__ import annotations

from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import mlflow_params

PARAMS = [
    Param("log_period", "int", help="Steps between TensorBoard flushes and uploads."),
    Param("enable_tensorboard", "bool", help="Enable TensorBoard logging."),
    Param("enable_wandb", "bool", help="Enable W&B logging."),
    Param("enable_mlflow", "bool", primus=True, help="Enable MLflow logging."),
    *mlflow_params(),
]


def schema() -> Schema:
    return Schema("maxtext parameter", PARAMS, open=True)
