"""Primus's metrics options as fields of upstream's ``metrics`` config.

``with_primus_options`` turns the loaded ``MetricsProcessor.Config`` (0.3; or a user's subclass of it)
into a subclass that also has the fields below, so they are set the same way as upstream's own — in the
experiment YAML's ``metrics:`` block or on the command line (``--metrics.enable-mlflow``) — and are
part of the config dict every tracker receives. ``build()`` still constructs the same processor class.
``primus_job_config_class`` does the same for a 0.2.2 ``JobConfig`` class, whose ``metrics`` field type is
what its TOML loader and command-line parser read (so ``[metrics] enable_mlflow = true`` works too)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

PRIMUS_FIELDS = (
    "enable_mlflow",
    "mlflow_run_name",
    "mlflow_experiment_name",
    "mlflow_upload_performance_metrics",
    "mlflow_upload_logs",
    "mlflow_upload_traces",
    "mlflow_upload_tracelens_report",
    "primus_exit_deadline",
    "primus_journal_retention",
    "peak_tflops",
    "mlflow_performance_metrics_across_ranks",
)


@functools.cache
def primus_config_class(base: type) -> type:
    if all(name in {f.name for f in dataclasses.fields(base)} for name in PRIMUS_FIELDS):
        return base

    @dataclass(kw_only=True, slots=True)
    class PrimusMetricsConfig(base):
        enable_mlflow: bool = False
        """Whether to log metrics to MLflow (MLFLOW_TRACKING_URI; default: a local sqlite store)"""

        mlflow_run_name: str | None = None
        """MLflow run name (default: the run directory's name)"""

        mlflow_experiment_name: str | None = None
        """MLflow experiment name (default: primus)"""

        mlflow_upload_performance_metrics: bool = False
        """Also log tokens/s, TFLOP/s, MFU, memory and utilisation (perf/, mem/, sys/) every log step"""

        mlflow_performance_metrics_across_ranks: bool = False
        """With mlflow_upload_performance_metrics: memory and utilisation as min/mean/max over ranks (every rank
        reads its own; one small gather of host values per log step)"""

        mlflow_upload_logs: bool = False
        """Write this run's log to <run_dir>/logs and upload it to MLflow after training"""

        mlflow_upload_traces: bool = False
        """Write profiler traces to <run_dir>/traces and upload them to MLflow after training"""

        mlflow_upload_tracelens_report: bool = False
        """Write a report analysing this run's profiler traces to <run_dir>/reports and upload it to MLflow"""

        peak_tflops: float | None = None
        """Dense peak TFLOP/s of one device for the training dtype, for Primus's perf/mfu (default: the built-in
        table's; no MFU for a device it does not know)"""

        primus_exit_deadline: float = 30.0
        """Seconds to wait at exit for the trackers to deliver (as Megatron's --primus-exit-deadline); what they
        could not deliver stays in the run's journal for `primus tracking sync`"""

        primus_journal_retention: str = "keep"
        """keep: the run's journal stays whole; delivered: a closed journal segment is deleted once every tracker
        of the run has it (as Megatron's --primus-journal-retention)"""

    PrimusMetricsConfig.__name__ = PrimusMetricsConfig.__qualname__ = f"Primus{base.__qualname__.replace('.', '')}"
    return PrimusMetricsConfig


@functools.cache
def primus_job_config_class(job_config_class: type) -> type:
    """``job_config_class`` (upstream's ``JobConfig`` or a merge of it with a user's custom config) with
    Primus's fields in its ``metrics`` section."""
    [metrics] = [f for f in dataclasses.fields(job_config_class) if f.name == "metrics"]
    options = primus_config_class(metrics.type)  # type: ignore[arg-type]  # a class: mypy holds type[Any] unhashable
    if options is metrics.type:
        return job_config_class
    return dataclasses.make_dataclass(
        f"Primus{job_config_class.__name__}",
        [("metrics", options, dataclasses.field(default_factory=options))],
        bases=(job_config_class,),
    )


def with_primus_options(metrics_config: Any) -> Any:
    cls = primus_config_class(type(metrics_config))  # type: ignore[arg-type]  # as above
    if type(metrics_config) is cls:
        return metrics_config
    values = {f.name: getattr(metrics_config, f.name) for f in dataclasses.fields(metrics_config) if f.init}
    return cls(**values)
