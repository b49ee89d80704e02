"""TorchTitan schema: the ``metrics:`` section (upstream's MetricsProcessor.Config fields plus
Primus's MLflow switches), strict. Other sections pass through to TorchTitan's own config, which
checks them when the job starts."""

from __future__ import annotations

from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import mlflow_params

PARAMS = [
    Param("metrics.log_freq", "int", help="Steps between metric logs."),
    Param("metrics.enable_tensorboard", "bool", help="Enable TensorBoard logging."),
    Param("metrics.enable_wandb", "bool", help="Enable W&B logging."),
    Param("metrics.save_tb_folder", "str", help="TensorBoard output subfolder."),
    Param("metrics.save_for_all_ranks", "bool", help="Write metrics from every rank."),
    Param("metrics.disable_color_printing", "bool", help="No ANSI colours on the console."),
    Param("metrics.enable_mlflow", "bool", primus=True, help="Enable MLflow logging."),
    *mlflow_params("metrics."),
]


def schema() -> Schema:
    return Schema("torchtitan parameter", PARAMS, open=True)
