"""Megatron schema: every upstream megatron-core argument (from the generated table, see
``megatron_table``) plus Primus's own parameters, which upstream's parser does not know."""

from __future__ import annotations

from primus.config import yaml12
from primus.config.schema import Param, Schema
from primus.config.schemas.megatron_table import TABLE_PATH
from primus.config.schemas.tracking import mlflow_params

# Arguments upstream 0.19.2 dropped are still accepted and honoured by Primus, so older configs
# keep working (log_learning_rate_to_tensorboard, log_batch_size_to_tensorboard, log_avg_*).
PRIMUS_PARAMS = [
    Param("disable_tensorboard", "bool", primus=True, help="Turn TensorBoard off."),
    Param("disable_wandb", "bool", primus=True, help="Turn Weights & Biases off."),
    Param("disable_mlflow", "bool", primus=True, help="Turn MLflow off."),
    *mlflow_params(),
    Param("mlflow_upload_traces", "bool", primus=True, help="Upload profiler trace files."),
    Param("mlflow_upload_logs", "bool", primus=True, help="Upload training log files."),
    Param("mlflow_upload_tracelens_report", "bool", primus=True, help="Generate and upload a trace report."),
    Param("log_avg_skip_iterations", "int", primus=True, help="Warm-up iterations left out of averages."),
    Param("log_avg_reset_interval", "int", primus=True, help="Iterations after which running averages reset."),
    Param("log_learning_rate_to_tensorboard", "bool", primus=True, help="Log the learning rate."),
    Param("log_batch_size_to_tensorboard", "bool", primus=True, help="Log the batch size."),
    Param("primus_run_dir", "str", nullable=True, primus=True, help="This run's directory (journal, run ids)."),
    Param("primus_exit_deadline", "float", primus=True, help="Seconds to wait at exit for trackers to deliver."),
]


def upstream_params() -> list[Param]:
    table = yaml12.load_file(TABLE_PATH)["args"]
    return [
        Param(
            name,
            entry["type"],
            default=entry["default"],
            nullable=entry["default"] is None,
            is_list="nargs" in entry,
            choices=tuple(entry["choices"]) if "choices" in entry else None,
            option=entry.get("option"),
            true_flag=entry.get("true_flag"),
            false_flag=entry.get("false_flag"),
        )
        for name, entry in table.items()
    ]


def schema() -> Schema:
    return Schema("megatron parameter", [*upstream_params(), *PRIMUS_PARAMS])
