"""MaxText schema: every key of MaxText's own pydantic config, typed by its annotations (the generated table,
``maxtext_table``: MaxText lives in its own environment, so the table is what the launching one reads), plus
Primus's tracker switches; the keys Primus reads to place a run keep their help here."""

from __future__ import annotations

from pathlib import Path

from primus.config.schema import Param, Schema
from primus.config.schemas import upstream_tables
from primus.config.schemas.tracking import params_for
from primus.upstreams.maxtext import MAXTEXT  # a declaration; imports no upstream

LOG_PERIOD = Param(
    "log_period",
    "int",
    ge=1,
    help="Train steps between TensorBoard flushes (also GCS metric uploads and managed-profiler updates).",
)
CHECKED_UPSTREAM = [LOG_PERIOD]  # upstream's own, checked by the plan on whatever path it came (its command line)
PARAMS = [
    LOG_PERIOD,
    Param(
        "enable_tensorboard",
        "bool",
        help="Enable TensorBoard logging (<base_output_directory>/<run_name>/tensorboard/<run_name>).",
    ),
    Param("enable_wandb", "bool", help="Enable W&B logging."),
    Param("wandb_project_name", "str", help="W&B project."),
    Param("wandb_run_name", "str", help="W&B run name (default: run_name)."),
    Param("run_name", "str", help="MaxText's run name (default under primus train: the run directory's name)."),
    Param(
        "base_output_directory",
        "str",
        help="Where MaxText writes its run folder (default under primus train: the run directory's parent).",
    ),
    *params_for("maxtext"),
]


def table() -> Path:
    return upstream_tables.select("maxtext", upstream_tables.installed(MAXTEXT))


def schema() -> Schema:
    return Schema("maxtext parameter", [*upstream_tables.params(table()), *PARAMS])
