"""Megatron-Bridge's checkpoints under Primus (patches/checkpoint_patches.py), on the session's trainings
(conftest.py): ``tracked`` saves at steps 2 and 4, ``resumed`` loads step 4 and trains step 5. Each save is journaled
after its start mark; W&B gets the artifact Bridge's own hook logs for it (that hook run on a copy of the same
checkpoints, read back from both offline run files), once; MLflow a manifest and, as the experiment asks, the files;
the resume is journaled with the iteration it resumes from and reaches MLflow and W&B."""

from __future__ import annotations

import json

import pytest
from bridge_runs import EXPERIMENT, ITERATIONS, RESUMED_EXPERIMENT, RUN_NAME, WANDB_PROJECT, bridges_own_artifacts
from support.journal_files import journal_lines
from support.one_logger_files import attempts, attrs, named
from support.readers import artifact_relative_to, read_tb_texts, wandb_artifacts, wandb_config

pytestmark = pytest.mark.slow

SAVED_AT = (2, 4)  # save_interval 2 of 4 steps
POINTER = "latest_wandb_artifact_path.txt"


def checkpoint_events(run) -> list[dict]:
    return [r["d"] for r in journal_lines(run.run_dir()) if r["k"] == "e" and r["d"]["event"].startswith("checkpoint")]


def files_under(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_each_save_is_journaled_after_its_start_mark(tracked):
    folder = tracked.workdir / "ckpt"
    events = checkpoint_events(tracked)
    assert [(e["event"], e["iteration"]) for e in events] == [
        (event, iteration) for iteration in SAVED_AT for event in ("checkpoint_save_start", "checkpoint_saved")]
    for save, iteration in zip(events[1::2], SAVED_AT, strict=True):
        alias = f"iter_{iteration:07d}"
        assert (save["path"], save["artifact"], save["alias"]) == (str(folder / alias), "ckpt", alias)
        assert (save["files"], save["wandb_pointer"]) == ({}, str(folder / POINTER))  # Bridge's hook adds no file
        assert save["seconds"] > 0 and save["bytes"] > 2_000_000, save  # the tiny GPT's 2.3 MB
    texts = read_tb_texts(tracked.workdir / "tb")["checkpoints/text_summary"]
    assert [step for step, _ in texts] == list(SAVED_AT)


def test_wandb_gets_the_artifact_bridges_own_hook_logs_once_per_save(tracked, tmp_path):
    folder = tracked.workdir / "ckpt"
    ours = wandb_artifacts(tracked.workdir / "wandb")  # Bridge's own hook, without its writer, logged none
    assert [(a["name"], a["aliases"], a["metadata"]) for a in ours] == [
        ("ckpt", [f"iter_{i:07d}", "latest"], {"iteration": i}) for i in SAVED_AT]
    copy = bridges_own_artifacts(folder, tmp_path)
    bridges = wandb_artifacts(tmp_path / "wandb")
    assert [artifact_relative_to(a, folder) for a in ours] == [artifact_relative_to(a, copy) for a in bridges]
    assert artifact_relative_to(bridges[0], copy)["entries"]["metadata.json"] == "iter_0000002/metadata.json"
    assert (folder / POINTER).read_text() == (copy / POINTER).read_text() == f"/{WANDB_PROJECT}"


def test_mlflow_holds_a_manifest_and_the_files_of_each_save(tracked, mlflow_client, tmp_path):
    folder = tracked.workdir / "ckpt"
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(EXPERIMENT).experiment_id])
    run_id = run.info.run_id
    # the manifests and the files (the experiment's mlflow_upload_checkpoints), and nothing of Bridge's own MLflow
    # hook, which would upload each folder under ckpt/ with its writer
    assert sorted(a.path for a in mlflow_client.list_artifacts(run_id)) == ["checkpoints"]
    mlflow_client.download_artifacts(run_id, "checkpoints", str(tmp_path))
    saves = [e for e in checkpoint_events(tracked) if e["event"] == "checkpoint_saved"]
    for save, iteration in zip(saves, SAVED_AT, strict=True):
        alias = f"iter_{iteration:07d}"
        manifest = json.loads((tmp_path / "checkpoints" / f"{alias}.json").read_text())
        assert {k: manifest[k] for k in ("iteration", "path", "seconds", "bytes")} == {
            "iteration": iteration, "path": str(folder / alias), "seconds": save["seconds"], "bytes": save["bytes"]}
        assert files_under(tmp_path / "checkpoints" / alias) == files_under(folder / alias)


def test_a_resumed_run_journals_the_load_and_tells_the_trackers(resumed, tracked, mlflow_client):
    path = str(tracked.workdir / "ckpt" / "iter_0000004")
    [load] = checkpoint_events(resumed)  # and no save: this run saves nothing
    assert (load["event"], load["iteration"], load["path"]) == ("checkpoint_loaded", 4, path)
    # the artifact Bridge's own load hook asks W&B for: "<pointer file's entity/project>/<save folder>:<checkpoint>"
    assert load["wandb_artifact"] == f"/{WANDB_PROJECT}/ckpt:iter_0000004"
    # loaded in setup, before the run started at the first step: kept until then with its own time
    assert 0 < load["seconds"] < resumed.finished.seconds and "at_ms" in load
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(RESUMED_EXPERIMENT).experiment_id])
    assert run.data.tags["primus.resumed_from"] == path
    assert wandb_config(resumed.workdir / "wandb")["primus.resumed_from"] == path
    # W&B refuses use_artifact offline; Bridge's own hook prints "failed to find checkpoint ... in wandb" then
    assert f"W&B did not find the checkpoint {path}" in resumed.finished.output, resumed.finished.explain()


def test_one_logger_has_each_run_its_saves_and_the_load(tracked, resumed):
    """One-Logger (enable_one_logger, on by default; the real nv-one-logger) on both trainings: ``tracked``'s
    application with its loop of 4 iterations and its saves at 2 and 4 under its name; ``resumed``'s load of 4."""
    [first] = attempts(tracked.run_dir()).values()
    assert len(named(first, "start", "application")) == len(named(first, "stop", "application")) == 1
    assert [attrs(r)["current_iteration"] for r in named(first, "event", "save_checkpoint_success")] == list(SAVED_AT)
    assert attrs(named(first, "event", "training_metrics_update")[-1])["num_iterations"] == ITERATIONS
    [init] = named(first, "event", "one_logger_initialization")
    assert attrs(init)["session_tag"] == RUN_NAME
    assert "one_logger_project:megatron_bridge" in attrs(init)["custom_metadata"]
    [config] = named(first, "event", "update_training_telemetry_config")
    assert (attrs(config)["global_batch_size"], attrs(config)["train_iterations_target"]) == (2, ITERATIONS)
    [second] = attempts(resumed.run_dir()).values()
    assert len(named(second, "complete", "checkpoint_load")) == 1
    [loop] = named(second, "start", "training_loop")
    assert attrs(loop)["train_iterations_start"] == ITERATIONS
