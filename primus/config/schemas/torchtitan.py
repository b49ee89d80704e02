"""TorchTitan schema: the ``metrics:`` section (upstream's MetricsProcessor.Config fields plus
Primus's MLflow switches) and ``model:`` (0.3: upstream's ``--module``/``--config``; 0.2.2: upstream's
own ``model`` section), strict. Other sections
pass through to TorchTitan's own config, which Primus checks field by field when the job starts."""

from __future__ import annotations

from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import mlflow_params

PARAMS = [
    Param("metrics.log_freq", "int", ge=1, help="Steps between metric logs."),
    Param("metrics.enable_tensorboard", "bool", help="Enable TensorBoard logging."),
    Param("metrics.enable_wandb", "bool", help="Enable W&B logging."),
    Param("metrics.save_tb_folder", "str", help="TensorBoard output subfolder."),
    Param("metrics.save_for_all_ranks", "bool", help="Write metrics from every rank."),
    Param("metrics.disable_color_printing", "bool", help="No ANSI colours on the console."),
    Param("metrics.enable_mlflow", "bool", primus=True, help="Enable MLflow logging."),
    *mlflow_params("metrics."),
    Param("metrics.mlflow_upload_logs", "bool", primus=True, help="Upload this run's log file to MLflow."),
    Param("metrics.mlflow_upload_traces", "bool", primus=True, help="Upload this run's profiler traces to MLflow."),
    Param("metrics.mlflow_upload_tracelens_report", "bool", primus=True,
          help="Write a report analysing this run's profiler traces and upload it to MLflow."),
    Param("metrics.primus_exit_deadline", "float", primus=True, gt=0,
          help="Seconds to wait at exit for trackers to deliver."),
    Param("model.module", "str", primus=True,
          help="torchtitan --module: a model name (llama3) or an importable module with a config_registry."),
    Param("model.config", "str", primus=True, help="torchtitan --config: the config function, e.g. llama3_8b."),
    # torchtitan 0.2.2 names the model in upstream's own `model` section (JobConfig.Model) instead
    Param("model.name", "str", default="llama3", help="torchtitan 0.2.2: the model to train (0.3: model.module)."),
    Param("model.flavor", "str", default="debugmodel",
          help="torchtitan 0.2.2: the model's configuration, e.g. 8B (0.3: model.config)."),
    Param("model.hf_assets_path", "str", default="./tests/assets/tokenizer",
          help="torchtitan 0.2.2: folder of the tokenizer and Hugging Face assets (0.3: hf_assets_path)."),
    Param("model.tokenizer_path", "str", nullable=True,
          help="torchtitan 0.2.2: deprecated, use model.hf_assets_path."),
    Param("model.converters", "str", default=[], is_list=True,
          help="torchtitan 0.2.2: model converters to apply, e.g. [float8]."),
    Param("model.print_after_conversion", "bool", default=False,
          help="torchtitan 0.2.2: print the model after the converters ran."),
]


def schema() -> Schema:
    return Schema("torchtitan parameter", PARAMS, open=True)
