"""The sinks a run's config asks for, built the same way in the training process and in its
delivery process (``delivery_child``)."""

from __future__ import annotations

from collections.abc import Callable, Collection

from primus.tracking.config import TrackingConfig, resolved
from primus.tracking.enums import SinkName
from primus.tracking.meta import RunMeta
from primus.tracking.plugin_sinks import build_plugin_sinks
from primus.tracking.sink import Sink
from primus.tracking.sinks.console import ConsoleSink
from primus.tracking.sinks.mlflow import MlflowSink
from primus.tracking.sinks.one_logger import OneLoggerSink
from primus.tracking.sinks.tensorboard import TensorBoardSink
from primus.tracking.sinks.wandb import WandbSink
from primus.tracking.state import RunState

# Sinks whose clients spend milliseconds of Python per request (MLflow's client and SQLAlchemy, wandb.log,
# protobuf encoding for TensorBoard): with delivery="process" they run in the delivery process, off the
# training process's GIL. The console and One-Logger stay in the training process (they print, or hook it);
# plugin sinks are trackers too, and go out.
IN_PROCESS = (SinkName.CONSOLE, SinkName.ONE_LOGGER)


def out_of_process(name: str) -> bool:
    return name not in IN_PROCESS


def sink_names(cfg: TrackingConfig) -> list[str]:
    """The enabled sinks, in delivery order: the built-in ones, then the plugins (``cfg`` resolved)."""
    wanted = {
        SinkName.CONSOLE: cfg.console,
        SinkName.TENSORBOARD: cfg.tensorboard,
        SinkName.WANDB: cfg.wandb and cfg.wandb.mode != "disabled",
        SinkName.MLFLOW: cfg.mlflow,
        SinkName.ONE_LOGGER: cfg.one_logger,
    }
    return [*(name for name, on in wanted.items() if on), *(cfg.plugin_sinks or ())]


def build_sinks(
    cfg: TrackingConfig, meta: RunMeta, state: RunState, wandb_run_id: str | None, names: Collection[str]
) -> list[Sink]:
    """The sinks of ``names`` (from ``sink_names``). A sink imports its tracker only when it opens."""
    builders: dict[str, Callable[[], Sink]] = {
        SinkName.CONSOLE: lambda: ConsoleSink(resolved(cfg.console, "console")),
        SinkName.TENSORBOARD: lambda: TensorBoardSink(resolved(cfg.tensorboard, "tensorboard")),
        SinkName.WANDB: lambda: WandbSink(
            resolved(cfg.wandb, "wandb"), meta, state, resolved(wandb_run_id, "wandb run id")
        ),
        SinkName.MLFLOW: lambda: MlflowSink(resolved(cfg.mlflow, "mlflow"), meta, state, cfg.run_dir),
        SinkName.ONE_LOGGER: lambda: OneLoggerSink(
            resolved(cfg.one_logger, "one_logger"), resolved(cfg.run_name, "run_name")
        ),
    }
    wanted = [name for name in sink_names(cfg) if name in names]
    plugins = build_plugin_sinks([n for n in wanted if n not in builders], meta, cfg.run_dir, state)
    return [*(builders[name]() for name in wanted if name in builders), *plugins]
