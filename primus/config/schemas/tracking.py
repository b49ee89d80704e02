"""Primus tracking parameters that several backends share under the same names."""

from __future__ import annotations

from primus.config.schema import Param

JOURNAL_RETENTIONS = ("keep", "delivered")  # primus.tracking.config's (config must not import tracking; a test checks)


def mlflow_params(prefix: str = "") -> list[Param]:
    """MLflow run naming and the performance-metrics upload switch, named ``<prefix><name>``."""
    return [
        Param(f"{prefix}mlflow_run_name", "str", nullable=True, primus=True, help="MLflow run name."),
        Param(
            f"{prefix}mlflow_experiment_name",
            "str",
            nullable=True,
            primus=True,
            help="MLflow experiment name; unset: MLFLOW_EXPERIMENT_NAME, else 'primus'.",
        ),
        Param(
            f"{prefix}mlflow_upload_performance_metrics",
            "bool",
            primus=True,
            help="Upload the perf/memory/utilisation metric set (turns the throughput calculation on).",
        ),
    ]


def journal_retention_param(name: str = "primus_journal_retention") -> Param:
    return Param(
        name,
        "str",
        default="keep",
        choices=JOURNAL_RETENTIONS,
        primus=True,
        help="keep: the run's journal stays whole (report and sync can replay all of it); delivered: a closed "
        "journal segment is deleted once every tracker of the run has it.",
    )


def performance_params(prefix: str = "", *, across_ranks: bool = True) -> list[Param]:
    """The device peak MFU is measured against, and (where the backend gathers them) the across-rank figures,
    named ``<prefix><name>``."""
    params = [
        Param(
            f"{prefix}peak_tflops",
            "float",
            nullable=True,
            primus=True,
            gt=0,
            help="Dense peak TFLOP/s of one device for the training dtype, for MFU: overrides the built-in table "
            "(null: the table's; no MFU for a device it does not know).",
        ),
        Param(
            f"{prefix}mlflow_performance_metrics_across_ranks",
            "bool",
            primus=True,
            help="With mlflow_upload_performance_metrics: memory and utilisation as min/mean/max over ranks "
            "(one small gather of host values per log step; off: the logging rank's own).",
        ),
    ]
    return params if across_ranks else params[:1]
