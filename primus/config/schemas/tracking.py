"""Primus tracking parameters that several backends share under the same names."""

from __future__ import annotations

from primus.config.schema import Param


def mlflow_params(prefix: str = "") -> list[Param]:
    """MLflow run naming and the performance-metrics upload switch, named ``<prefix><name>``."""
    return [
        Param(f"{prefix}mlflow_run_name", "str", nullable=True, primus=True, help="MLflow run name."),
        Param(f"{prefix}mlflow_experiment_name", "str", nullable=True, primus=True, help="MLflow experiment name."),
        Param(
            f"{prefix}mlflow_upload_performance_metrics",
            "bool",
            primus=True,
            help="Upload the perf/memory/utilisation metric set (turns the throughput calculation on).",
        ),
    ]
