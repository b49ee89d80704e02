"""Every sink by name: the built-in trackers, registered here as a plugin is by its entry point, and the
plugins (``sinks/plugins``). The one place a sink is built, the same way in the training process, its delivery
process (``delivery/child``) and ``primus tracking sync``: its class called with its ``SinkContext``."""

from __future__ import annotations

from collections.abc import Iterable

from primus.tracking.journal.run_state import RunState
from primus.tracking.settings.config import TrackingConfig
from primus.tracking.sinks.plugins import sink_classes as plugin_sink_classes
from primus.tracking.sinks.sink import Sink
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.comet import CometSink
from primus.tracking.trackers.context import SinkContext
from primus.tracking.trackers.mlflow import MlflowSink
from primus.tracking.trackers.one_logger import OneLoggerSink
from primus.tracking.trackers.otlp import OtlpSink
from primus.tracking.trackers.prometheus import PrometheusSink
from primus.tracking.trackers.tensorboard import TensorBoardSink
from primus.tracking.trackers.wandb import WandbSink

BUILT_IN: dict[str, type[Sink]] = {
    cls.name: cls
    for cls in (TensorBoardSink, WandbSink, MlflowSink, CometSink, OneLoggerSink, OtlpSink, PrometheusSink)
}


def sink_names(cfg: TrackingConfig) -> list[str]:
    """The enabled sinks, in delivery order: the built-in ones, then the plugins (``cfg`` resolved)."""
    wanted = {
        TensorBoardSink.name: cfg.tensorboard,
        WandbSink.name: cfg.wandb and cfg.wandb.mode != "disabled",
        MlflowSink.name: cfg.mlflow,
        CometSink.name: cfg.comet,
        OneLoggerSink.name: cfg.one_logger,
        OtlpSink.name: cfg.otlp,
        PrometheusSink.name: cfg.prometheus,
    }
    return [*(name for name, on in wanted.items() if on), *(cfg.plugin_sinks or ())]


def sink_classes(names: Iterable[str]) -> dict[str, type[Sink]]:
    """The class of each named sink, in order; PluginError (``sinks/plugins.sink_classes``) for a plugin that
    cannot be used."""
    names = list(names)
    plugins = plugin_sink_classes(n for n in names if n not in BUILT_IN)
    return {name: BUILT_IN.get(name) or plugins[name] for name in names}


def build_sinks(names: Iterable[str], cfg: TrackingConfig, meta: RunMeta, state: RunState) -> list[Sink]:
    """The named sinks of the run whose settings are ``cfg`` and whose ``meta.json`` is ``meta``. A sink imports
    its tracker only when it opens."""
    sinks = []
    for name, cls in sink_classes(names).items():
        context = SinkContext(
            name, cfg.run_dir, str(meta.run_name), str(meta.experiment_name), meta.params, meta.tags, state, cfg
        )
        sinks.append(cls(context))  # type: ignore[call-arg]  # Sink takes nothing; a subclass, its SinkContext
    return sinks
