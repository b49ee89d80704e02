"""Checkpoint records (primus/tracking/checkpoints/checkpoint_journal.py): journaled by a real run and read back from every real
tracker — a W&B reference artifact in the offline run file, an MLflow manifest (and, when asked, the files) on a
real server, a TensorBoard text entry — and the parts on their own: the size, the record read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.journal_files import journal_lines
from support.readers import wandb_artifacts, wandb_config

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal, in_folder_of_checkpoints, size_of
from primus.tracking.checkpoints.hooks import SaveFolderArtifacts
from primus.tracking.journal.records import (
    EVENT,
    LOADED,
    METRICS,
    SAVE_START,
    SAVED,
    CheckpointLoaded,
    CheckpointSaved,
    Metrics,
    NamedEvent,
    Record,
    event_of,
)


def checkpoint_folder(root, iteration: int):
    folder = root / "ckpt" / f"iter_{iteration:07d}"
    (folder / "shards").mkdir(parents=True)
    (folder / "metadata.json").write_text('{"a": 1}')
    (folder / "shards" / "0.distcp").write_bytes(b"x" * 100)
    return folder


def a_save(folder, iteration: int, **kw) -> CheckpointSaved:
    return CheckpointSaved(iteration=iteration, path=str(folder), artifact="ckpt", alias=folder.name, **kw)


def test_size_of_a_folder_a_file_and_past_the_bound(tmp_path):
    folder = checkpoint_folder(tmp_path, 1)
    assert size_of(folder) == 108
    assert size_of(folder / "metadata.json") == 8
    assert size_of(folder, max_files=1) is None  # two files: not cheap
    assert size_of(tmp_path / "missing") is None


def test_records_read_back_and_leave_out_fields_they_do_not_know():
    data = {"event": SAVED, "iteration": 4, "path": "s3://b/c", "artifact": "c", "alias": "step-4", "later": 1}
    assert event_of(Record(EVENT, 0, 1, data, 0)) == CheckpointSaved(4, "s3://b/c", "c", "step-4")
    assert event_of(Record(METRICS, 0, 1, {"event": SAVED}, 0)) == Metrics({"event": SAVED})
    assert event_of(Record(EVENT, 0, 1, {"event": LOADED, "path": "/p"}, 0)) == CheckpointLoaded("/p")
    assert event_of(Record(EVENT, 0, 1, {"event": SAVED}, 0)) == NamedEvent(SAVED, {"event": SAVED})  # no path


class Events(list):
    """What a run's ``event`` was given, in order."""

    def event(self, name, **fields):
        self.append((name, fields))


def test_records_made_before_the_run_starts_wait_for_it_with_their_time():
    journal, run = CheckpointJournal(), Events()
    journal.loaded(CheckpointLoaded("/ckpt/10", 10))
    assert run == []
    journal.attach(run)
    journal.save_started(20)
    [(name, fields), started] = run
    assert name == LOADED and fields["path"] == "/ckpt/10" and fields["at_ms"] > 1.7e12
    assert started == (SAVE_START, {"iteration": 20})


def test_a_save_without_its_start_mark_has_no_seconds_and_a_uri_no_size():
    run = Events()
    CheckpointJournal(run).save_ended(in_folder_of_checkpoints("gs://bucket/run/checkpoints/10", 10))
    [(name, fields)] = run
    assert (name, fields["seconds"], fields["bytes"]) == (SAVED, None, None)
    assert (fields["artifact"], fields["alias"], fields["iteration"]) == ("checkpoints", "10", 10)


def test_a_uri_is_its_own_reference_and_a_path_becomes_file_uri(tmp_path):
    assert a_save(tmp_path, 1).uri == f"file://{tmp_path.resolve()}"
    assert CheckpointSaved(1, "gs://bucket/step-1", "c", "step-1").uri == "gs://bucket/step-1"


def upstreams_naming(save_dir: Path, checkpoint: Path) -> tuple[str, str]:
    return save_dir.stem, checkpoint.stem  # Megatron's and Bridge's wandb_utils._get_artifact_name_and_version


def test_a_save_folder_names_the_artifact_and_its_pointer_the_project_a_load_asks_in(tmp_path):
    artifacts = SaveFolderArtifacts(upstreams_naming, lambda save_dir: Path(save_dir) / "pointer.txt")
    folder = checkpoint_folder(tmp_path, 20)
    save = artifacts.saved(str(folder), str(folder.parent), 20, {"tracker.txt": "20"})
    assert save == CheckpointSaved(20, str(folder.resolve()), "ckpt", "iter_0000020", files={"tracker.txt": "20"},
                                   wandb_pointer=str(folder.parent / "pointer.txt"))
    assert artifacts.loaded(str(folder), str(folder.parent)) == CheckpointLoaded(
        str(folder.resolve()), 20, "ckpt:iter_0000020")  # no pointer file: the run's own project
    (folder.parent / "pointer.txt").write_text("team/proj\n")
    assert artifacts.loaded(str(folder / "mp_rank_00"), str(folder.parent)).iteration == 20  # Megatron's legacy file
    assert artifacts.loaded(str(folder), str(folder.parent)).wandb_artifact == "team/proj/ckpt:iter_0000020"
    assert artifacts.loaded(str(tmp_path / "hf-model"), str(tmp_path)).iteration is None  # not an iteration folder


@pytest.fixture(scope="module")
def tracked(tmp_path_factory, mlflow_server):
    """A run with every tracker (W&B offline) that journals a save (with its start mark), then a resume from it."""
    root = tmp_path_factory.mktemp("checkpoints")
    folder = checkpoint_folder(root, 2)
    pointer = root / "ckpt" / "latest_wandb_artifact_path.txt"
    config = TrackingConfig(run_dir=root / "run", experiment_name="checkpoints",
                            tensorboard=TensorBoardConfig(root / "tb"),
                            wandb=WandbConfig(project="primus-tests", mode="offline", save_dir=root / "wandb"),
                            mlflow=MlflowConfig(tracking_uri=mlflow_server.uri, upload_checkpoints=True),
                            exit_deadline_s=180)
    run = start_run(config)
    journal = CheckpointJournal(run)
    journal.save_started(2)
    journal.save_ended(a_save(folder, 2, files={"latest_checkpointed_iteration.txt": "2"},
                              wandb_pointer=str(pointer)))
    journal.loaded(CheckpointLoaded(str(folder), 2, "primus-tests/ckpt:iter_0000002"))
    assert run.flush(180)
    run.finish()
    return run, folder, pointer


@pytest.mark.slow
def test_the_journal_holds_a_start_mark_then_the_save_then_the_load(tracked):
    run, folder, _ = tracked
    events = [r for r in journal_lines(run.run_dir) if r["k"] == "e" and r["d"]["event"].startswith("checkpoint")]
    start, save, load = events
    assert start["d"] == {"event": SAVE_START, "iteration": 2}
    assert save["d"]["path"] == str(folder) and save["d"]["bytes"] == 108
    assert 0 <= save["d"]["seconds"] <= (save["t"] - start["t"]) / 1000 + 0.01
    assert load["d"] == {"event": LOADED, "path": str(folder), "iteration": 2,
                         "wandb_artifact": "primus-tests/ckpt:iter_0000002", "seconds": None}  # no load start mark


@pytest.mark.slow
def test_wandb_gets_a_reference_artifact_and_the_resume(tracked):
    run, folder, pointer = tracked
    [artifact] = wandb_artifacts(run.run_dir.parent / "wandb")
    assert artifact == {
        "name": "ckpt", "type": "model", "metadata": {"iteration": 2}, "aliases": ["iter_0000002", "latest"],
        "entries": {"metadata.json": f"file://{folder}/metadata.json",
                    "shards/0.distcp": f"file://{folder}/shards/0.distcp",
                    "latest_checkpointed_iteration.txt": 1},  # the file's text at the save: "2"
    }
    assert pointer.read_text() == "/primus-tests"  # <entity>/<project>; offline W&B has no entity
    assert wandb_config(run.run_dir.parent / "wandb")["primus.resumed_from"] == str(folder)


@pytest.mark.slow
def test_mlflow_gets_a_manifest_the_files_asked_for_and_the_resumed_from_tag(tracked, mlflow_client, tmp_path):
    run, folder, _ = tracked
    [journaled] = [r for r in journal_lines(run.run_dir) if r["d"].get("event") == SAVED]
    local = mlflow_client.download_artifacts(run.mlflow_run_id, "checkpoints", str(tmp_path / "down"))
    manifest = json.loads((tmp_path / "down" / "checkpoints" / "iter_0000002.json").read_text())
    assert manifest == {"iteration": 2, "path": str(folder), "seconds": journaled["d"]["seconds"], "bytes": 108,
                        "saved_at_ms": journaled["t"]}
    uploaded = sorted(p.relative_to(local).as_posix() for p in (tmp_path / "down" / "checkpoints").rglob("*")
                      if p.is_file())
    assert uploaded == ["iter_0000002.json", "iter_0000002/metadata.json", "iter_0000002/shards/0.distcp"]
    assert mlflow_client.get_run(run.mlflow_run_id).data.tags["primus.resumed_from"] == str(folder)


@pytest.mark.slow
def test_tensorboard_gets_a_text_entry_per_save_and_the_resume(tracked):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run, folder, _ = tracked
    events = EventAccumulator(str(run.run_dir.parent / "tb"), size_guidance={"tensors": 0}).Reload()
    [entry] = events.Tensors("checkpoints/text_summary")
    assert entry.step == 2
    assert entry.tensor_proto.string_val[0].decode().startswith(f"iteration 2: {folder}, ")
    assert entry.tensor_proto.string_val[0].decode().endswith(", 108 bytes")
    [resumed] = events.Tensors("primus.resumed_from/text_summary")
    assert (resumed.step, resumed.tensor_proto.string_val[0].decode()) == (2, str(folder))


@pytest.mark.slow
def test_a_checkpoint_gone_before_delivery_holds_back_nothing(tmp_path, wandb_offline, mlflow_client, primus_caplog):
    kept, gone = checkpoint_folder(tmp_path, 4), tmp_path / "ckpt" / "iter_0000002"
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", wandb=WandbConfig(project="primus-tests"),
                                   mlflow=MlflowConfig(upload_checkpoints=True), exit_deadline_s=180))
    journal = CheckpointJournal(run)
    journal.save_ended(a_save(gone, 2, wandb_pointer=str(tmp_path / "no-such-dir" / "pointer.txt")))
    journal.save_ended(a_save(kept, 4, wandb_pointer=str(tmp_path / "no-such-dir" / "pointer.txt")))
    run.log(5, {"lm loss": 1.0})
    assert run.flush(180)
    run.finish()
    assert [a["aliases"] for a in wandb_artifacts(wandb_offline)] == [["iter_0000004", "latest"]]
    assert f"checkpoint {gone} is gone, not logged as a W&B artifact" in primus_caplog.text
    assert f"could not write {tmp_path / 'no-such-dir' / 'pointer.txt'}" in primus_caplog.text
    assert f"checkpoint {gone} is not on this machine, its files not uploaded" in primus_caplog.text
    local = mlflow_client.download_artifacts(run.mlflow_run_id, "checkpoints", str(tmp_path / "down"))
    assert sorted(p.relative_to(local).as_posix() for p in Path(local).rglob("*") if p.is_file()) == [
        "iter_0000002.json", "iter_0000004.json", "iter_0000004/metadata.json", "iter_0000004/shards/0.distcp"]
