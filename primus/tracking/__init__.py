"""Tracking core (layer 3): the metrics hub, the journal, its sinks (TensorBoard, W&B, MLflow, Comet, OTLP, a
Prometheus Pushgateway, and trackers other distributions add: ``sinks/plugins``; all found through
``trackers/registry``), lossless delivery and the run lifecycle.
Backend-agnostic: nothing here imports a backend or a trainer, and trackers are imported lazily by their sink, so
importing this is cheap.

    run = start_run(TrackingConfig(run_dir=..., tensorboard=TensorBoardConfig(log_dir=...), ...))
    run.install_exit_handlers()
    run.log(step, {"lm loss": 2.3, "perf/tokens_per_sec_per_gpu": 1.2e4})
    run.finish()
"""

from primus.tracking.journal.records import RunStatus, SinkName
from primus.tracking.run import Run, start_run
from primus.tracking.settings.config import (
    CometConfig,
    MlflowConfig,
    OneLoggerConfig,
    OtlpConfig,
    PrometheusConfig,
    TensorBoardConfig,
    TrackingConfig,
    TrackingConfigError,
    WandbConfig,
)

__all__ = [
    "CometConfig",
    "MlflowConfig",
    "OneLoggerConfig",
    "OtlpConfig",
    "PrometheusConfig",
    "Run",
    "RunStatus",
    "SinkName",
    "TensorBoardConfig",
    "TrackingConfig",
    "TrackingConfigError",
    "WandbConfig",
    "start_run",
]
