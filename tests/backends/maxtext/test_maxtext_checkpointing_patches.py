"""MaxText's checkpoints under Primus (patches/checkpointing_patches.py): the tiny CPU experiment saves every 3
steps (and its last step, 5) with upstream's asynchronous saves, then a second run of the same name continues from
it to step 8 (saves 6 and 7). Each save is journaled with its start mark and reaches W&B (offline) as a reference artifact
and the real MLflow server as a manifest; the resume, recorded before the run started, is ``primus.resumed_from``."""

from __future__ import annotations

import json

import pytest
from maxtext_runs import TINY_CPU, UPSTREAM_TRAIN
from support.journal_files import journal_lines, run_dirs_under
from support.one_logger_files import attempts, attrs, named
from support.readers import wandb_artifacts

pytestmark = pytest.mark.slow

EXPERIMENT = "maxtext-checkpoints"


@pytest.fixture(scope="module")
def saved_then_resumed(start, maxtext_python, primus_run_command, mlflow_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("maxtext-ckpt")
    command = [*primus_run_command, "--config", str(TINY_CPU), maxtext_python, *UPSTREAM_TRAIN, "run_name=ckpt",
               f"base_output_directory={out}", "enable_checkpointing=true", "checkpoint_period=3",
               "enable_tensorboard=false", "enable_wandb=true", "wandb_project_name=maxtext-e2e",
               f"mlflow_experiment_name={EXPERIMENT}"]
    env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    first = start("ckpt-first", [*command, "steps=6"], env=env)()
    assert first.returncode == 0, first.explain()
    second = start("ckpt-second", [*command, "steps=8"], env=env)()
    assert second.returncode == 0, second.explain()
    [run_dir] = run_dirs_under(out)
    return out / "ckpt" / "checkpoints", run_dir, (first, second)


def test_each_save_and_the_resume_are_journaled(saved_then_resumed):
    checkpoints, run_dir, _ = saved_then_resumed
    events = [(r["d"]["event"], r["d"].get("iteration"), r["d"].get("path")) for r in journal_lines(run_dir)
              if r["k"] == "e" and r["d"]["event"].startswith("checkpoint")]
    saved = [e for e in events if e[0] != "checkpoint_save_start"]
    assert saved == [("checkpoint_saved", 0, str(checkpoints / "0")), ("checkpoint_saved", 3, str(checkpoints / "3")),
                     ("checkpoint_saved", 5, str(checkpoints / "5")), ("checkpoint_loaded", 5, str(checkpoints / "5")),
                     ("checkpoint_saved", 6, str(checkpoints / "6")), ("checkpoint_saved", 7, str(checkpoints / "7"))]
    for _, step, _ in (e for e in saved if e[0] == "checkpoint_saved"):
        assert ("checkpoint_save_start", step, None) in events[: events.index(("checkpoint_saved", step,
                                                                                str(checkpoints / str(step))))]


def test_each_save_reaches_wandb_and_mlflow_with_the_resume(saved_then_resumed, mlflow_client, tmp_path):
    checkpoints, _, runs = saved_then_resumed
    logged = {(a["name"], tuple(a["aliases"]), a["metadata"]["iteration"])
              for run in runs for a in wandb_artifacts(run.wandb_dir)}
    assert logged == {("checkpoints", (str(n), "latest"), n) for n in (0, 3, 5, 6, 7)}
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert run.data.tags["primus.resumed_from"] == str(checkpoints / "5")
    mlflow_client.download_artifacts(run.info.run_id, "checkpoints", str(tmp_path))
    for n in (0, 3, 5, 6, 7):
        manifest = json.loads((tmp_path / "checkpoints" / f"{n}.json").read_text())
        assert (manifest["iteration"], manifest["path"]) == (n, str(checkpoints / str(n)))


def test_each_run_is_one_one_logger_application_with_its_async_saves_and_the_load(saved_then_resumed):
    """One-Logger (enable_one_logger, on by default; the real nv-one-logger): steps 0..5 then 6..7 (MaxText counts
    from 0: step 5 done is 6 iterations), each save an asynchronous one with its step."""
    _, run_dir, _ = saved_then_resumed
    files = attempts(run_dir)
    assert list(files) == ["attempt-1.jsonl", "attempt-2.jsonl"]
    first, second = files.values()
    for recs, saves in ((first, [0, 3, 5]), (second, [6, 7])):
        assert len(named(recs, "start", "application")) == len(named(recs, "stop", "application")) == 1
        assert len(named(recs, "start", "training_loop")) == 1
        assert [attrs(r)["current_iteration"] for r in named(recs, "event", "save_checkpoint_success")] == saves
        assert len(named(recs, "stop", "checkpoint_save_async")) == len(saves)
        [init] = named(recs, "event", "one_logger_initialization")
        assert attrs(init)["session_tag"] == "ckpt"  # the run's name
        assert "one_logger_project:maxtext" in attrs(init)["custom_metadata"]
    assert attrs(named(first, "event", "training_metrics_update")[-1])["num_iterations"] == 6
    assert len(named(second, "complete", "checkpoint_load")) == 1
    [loop] = named(second, "start", "training_loop")
    assert attrs(loop)["train_iterations_start"] == 6
    assert attrs(named(second, "event", "training_metrics_update")[-1])["num_iterations"] == 2
