"""One registry builds every sink, built-in or plugin, the same way: its class called with a SinkContext that
carries the run's settings, its meta.json and its saved state. Nothing here opens a tracker."""

from __future__ import annotations

from dataclasses import replace

import pytest

from primus.plugins import PluginError
from primus.tracking import CometConfig, MlflowConfig, TensorBoardConfig, TrackingConfig, TrackingConfigError, WandbConfig
from primus.tracking.journal.run_state import RunState
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.mlflow import MlflowSink
from primus.tracking.trackers.registry import BUILT_IN, build_sinks, sink_classes, sink_names
from primus.tracking.trackers.tensorboard import TensorBoardSink


def test_built_in_and_plugin_sinks_come_from_one_registry_in_delivery_order(sink_plugin):
    sink_plugin()
    assert list(BUILT_IN) == ["tensorboard", "wandb", "mlflow", "comet", "one_logger", "otlp", "prometheus"]
    classes = sink_classes(["mlflow", "demo", "tensorboard"])
    assert list(classes) == ["mlflow", "demo", "tensorboard"]
    assert classes["mlflow"] is MlflowSink and classes["tensorboard"] is TensorBoardSink
    assert classes["demo"].__name__ == "DemoSink" and classes["demo"].name == "demo"
    with pytest.raises(PluginError, match="'nosuch'"):
        sink_classes(["tensorboard", "nosuch"])


def test_every_sink_is_built_from_its_context_alone(sink_plugin, tmp_path):
    sink_plugin()
    cfg = TrackingConfig(run_dir=tmp_path / "run", experiment_name="exp", params={"lr": 0.1}, tags={"team": "x"},
                         tensorboard=TensorBoardConfig(tmp_path / "tb"), wandb=WandbConfig(mode="offline"),
                         mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:9"),
                         comet=CometConfig(project="p", offline=True, offline_dir=tmp_path / "cm")).resolve()
    cfg = replace(cfg, wandb=replace(cfg.wandb, run_id="abc123"))
    meta = RunMeta.build(cfg)
    cfg.run_dir.mkdir()
    state = RunState(cfg.run_dir)
    state.update("mlflow", run_id="kept")
    assert sink_names(cfg) == ["tensorboard", "wandb", "mlflow", "comet", "demo"]
    tensorboard, wandb, mlflow, comet, demo = build_sinks(sink_names(cfg), cfg, meta, state)
    assert tensorboard.cfg == cfg.tensorboard and mlflow.cfg == cfg.mlflow and wandb.cfg == cfg.wandb
    assert comet.cfg == cfg.comet and comet.cfg.offline_dir == tmp_path / "cm" and comet.cfg.name == "run"
    assert wandb.run_id == "abc123" and mlflow.tracking_uri == "http://127.0.0.1:9"
    for sink in (wandb, mlflow, comet, demo):
        context = sink.context
        assert (context.name, context.run_dir, context.run_name, context.experiment_name) == \
            (sink.name, cfg.run_dir, "run", "exp")
        assert context.params == {"lr": 0.1} and context.tags["team"] == "x" and context.config is cfg
    assert mlflow.context.saved() == {"run_id": "kept"}  # each reads and keeps its own section of run.json
    demo.context.save(run_id="d1")
    assert state.section("demo") == {"run_id": "d1"} and state.section("mlflow") == {"run_id": "kept"}


def test_a_wandb_sink_without_the_runs_id_is_refused(tmp_path):
    cfg = TrackingConfig(run_dir=tmp_path, wandb=WandbConfig(mode="offline")).resolve()
    with pytest.raises(TrackingConfigError, match=r"wandb\.run_id is unset"):
        build_sinks(["wandb"], cfg, RunMeta.build(cfg), RunState(tmp_path))
