"""One-Logger on Megatron (spec §6) with the real nv-one-logger: the checkpoint-then-resume pair of runs (conftest.py,
shared with test_tracking_resume.py; One-Logger's options at their defaults, on) leaves one nv-one-logger application
per process in ``<run_dir>/one_logger/`` with its training loop, its save with the iteration, the iterations summarised,
and the project, run name and app tag; upstream's end-to-end figures (one_logger_utils, through the object Primus gives
``get_one_logger()``) reach MLflow as ``one_logger/*`` and agree with the run; a sync writes nothing twice. With the
legacy ``one_logger`` package on the path, upstream's own object is used and Primus's is not."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import pytest
from megatron_tracking_runs import RESUME_EXPERIMENT, mlflow_runs
from support.one_logger_files import attempts, attrs, named, outline
from support.readers import mlflow_history

from primus.backends.megatron.tracker_settings import one_logger_config
from primus.patches import REGISTRY, PatchContext, PatchRegistry
from primus.tracking.delivery.replay import sync_run
from primus.tracking.plan import Notices

GLOBAL_BATCH, SEQ_LENGTH = 8, 128  # megatron_runs.py's tiny model


def attempts_of(checkpoint: Path) -> dict[str, list[dict]]:
    return attempts(checkpoint / "primus")


def test_each_process_is_one_application_with_its_loop_save_and_options(stopped_then_resumed, checkpoint):
    files = attempts_of(checkpoint)
    assert list(files) == ["attempt-1.jsonl", "attempt-2.jsonl"]
    first, second = files.values()
    for recs in (first, second):
        for span in ("application", "training_loop", "checkpoint_save_sync"):
            assert len(named(recs, "start", span)) == len(named(recs, "stop", span)) == 1, span
    # the first process: iterations 1..2, saved at 2 (--save-interval 2 --exit-interval 2)
    [saved] = named(first, "event", "save_checkpoint_success")
    assert attrs(saved)["current_iteration"] == 2 and attrs(saved)["productive_train_iterations"] == 2
    last = named(first, "event", "training_metrics_update")[-1]
    assert (attrs(last)["num_iterations"], attrs(last)["num_train_samples"]) == (2, 2 * GLOBAL_BATCH)
    # the second: loaded iteration 2, trained 3, saved at 3 (upstream's save at the end of training)
    assert len(named(second, "complete", "checkpoint_load")) == 1
    [loop] = named(second, "start", "training_loop")
    assert attrs(loop)["train_iterations_start"] == 2
    [saved] = named(second, "event", "save_checkpoint_success")
    assert attrs(saved)["current_iteration"] == 3
    # the spec's defaults: project megatron-lm, the run's name (the checkpoint folder's), app tag version 0.0.0
    name = checkpoint.name
    for recs in (first, second):
        [init] = named(recs, "event", "one_logger_initialization")
        assert attrs(init)["session_tag"] == name
        tag = f"{name}_0.0.0_{GLOBAL_BATCH}_1_{SEQ_LENGTH}"
        assert {"one_logger_project:megatron-lm", f"one_logger_run_name:{name}", "one_logger_async:False",
                f"app_tag_run_name:{name}", "app_tag_run_version:0.0.0", f"app_tag:{tag}"} <= set(
                    attrs(init)["custom_metadata"])
        [config] = named(recs, "event", "update_training_telemetry_config")
        assert attrs(config)["perf_tag"] == tag


def test_upstreams_end_to_end_figures_reach_mlflow_and_the_application(stopped_then_resumed, checkpoint, mlflow_client):
    [run] = mlflow_runs(mlflow_client, RESUME_EXPERIMENT)

    def last(key: str) -> float:
        return mlflow_history(mlflow_client, run.info.run_id, f"one_logger/{key}")[-1][1]

    # the second process's own figures, as upstream's one_logger_utils computed them
    assert (last("train_iterations_start"), last("train_iterations_end")) == (2, 3)
    assert last("train_samples_end") == 3 * GLOBAL_BATCH and last("save_checkpoint_count") == 1
    assert 0 < last("app_train_loop_start_time") < last("app_train_loop_finish_time")
    # and in One-Logger, on the application span, at the times upstream logged them
    second = attempts_of(checkpoint)["attempt-2.jsonl"]
    figures = [attrs(r) for r in named(second, "event", "primus_e2e_metrics")]
    assert any(f.get("train_iterations_end") == 3 for f in figures)
    [loop] = named(second, "start", "training_loop")
    assert loop["start_event"]["attributes"]["timestamp_msec"] == int(last("app_train_loop_start_time"))


def test_a_sync_writes_nothing_twice(stopped_then_resumed, checkpoint):
    before = attempts_of(checkpoint)
    run_dir = checkpoint / "primus"
    (run_dir / "cursors" / "one_logger.json").unlink()  # the worst a killed delivery leaves: replay from the start
    assert sync_run(run_dir, timeout_s=120).delivered["one_logger"]
    after = attempts_of(checkpoint)

    assert {n: outline(recs) for n, recs in after.items()} == {n: outline(recs) for n, recs in before.items()}


@pytest.fixture
def global_vars_patched():
    registry = PatchRegistry()
    for patch in REGISTRY.patches():
        if patch.id == "megatron.one_logger.availability":
            registry.register(patch)
    registry.activate(PatchContext(platform=lambda: "cpu"))
    yield importlib.import_module("megatron.training.global_vars")
    registry.deactivate()


def test_with_the_legacy_package_upstreams_own_object_is_used(global_vars_patched, tmp_path, monkeypatch):
    legacy = tmp_path / "one_logger"
    legacy.mkdir()
    (legacy / "__init__.py").write_text("class OneLogger:\n    def __init__(self, config):\n        self.config = config\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(global_vars_patched, "_GLOBAL_ONE_LOGGER", None)
    args = argparse.Namespace(enable_one_logger=True, rank=0, world_size=1, one_logger_project="p",
                              one_logger_run_name="r", one_logger_async=False)
    try:
        global_vars_patched._set_one_logger(args)
    finally:
        sys.modules.pop("one_logger", None)  # imported by upstream: gone with the stand-in's folder
    used = global_vars_patched.get_one_logger()
    assert type(used).__module__ == "one_logger" and used.config == {"project": "p", "name": "r", "async": False}
    notices = Notices()
    assert one_logger_config(args, notices) is None  # Primus's stays off, and says so once
    assert [line for line in notices.infos if "legacy one_logger" in line] == [notices.infos[0]]
