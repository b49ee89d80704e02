"""The run directory's disk fills mid-run (a real tmpfs): nothing raises into training, what the journal cannot
take goes directly to the sinks that are up (on a thread of the training process, or in the delivery process), in order,
the journal takes records again once there is room, and the end of the run says exactly what was not journaled
and where it went."""

from __future__ import annotations

import logging

import pytest

from support.disks import fill
from support.journal_files import journal_lines
from support.readers import mlflow_history, read_tb_scalars

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.journal.records import METRICS, Record, SinkName
from primus.tracking.journal.run_state import RunState
from primus.tracking.measure.names import mlflow_key
from primus.tracking.trackers.context import SinkContext
from primus.tracking.trackers.mlflow import MlflowSink
from primus.tracking.trackers.tensorboard import TensorBoardSink

STEPS = 300
FREED_AT = 200


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_a_full_disk_sends_records_directly_to_the_trackers_and_says_where_they_went(tmpfs, tmp_path, primus_caplog,
                                                                                      delivery):
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    disk = tmpfs("disk", "size=256k")
    run = start_run(TrackingConfig(run_dir=disk / "run", exit_deadline_s=60, delivery=delivery,
                                   tensorboard=TensorBoardConfig(log_dir=tmp_path / "tb")))  # TensorBoard on another disk
    filler = fill(disk, leave=8 << 10)
    for step in range(STEPS):
        run.log(step, {"loss": step / 4, "lr": 1e-3})
        if step == FREED_AT:
            filler.unlink()  # room again: the journal takes records from the next tick on
        if step % 10 == 0:
            assert run.flush(60)  # a tick every 10 steps; flushed means delivered, directly or from the journal
    run.finish()

    steps = list(range(STEPS))
    assert [s for s, _ in read_tb_scalars(tmp_path / "tb")["loss"]] == steps  # in order, each once
    journaled = [r["s"] for r in journal_lines(disk / "run") if r["k"] == "m"]
    missing = sorted(set(steps) - set(journaled))
    assert journaled == sorted(set(journaled)) and 0 < len(missing) < FREED_AT  # a gap, then the journal again
    assert journaled[-1] == STEPS - 1 and missing[-1] <= FREED_AT
    stats = run.stats()
    assert stats["not_journaled"] == {"metrics": len(missing)}
    assert {name: (s["direct_delivered"], s["direct_lost"]) for name, s in stats["sinks"].items()} == \
        {"tensorboard": (len(missing), 0)}
    said = [r.getMessage() for r in primus_caplog.records if "could not be written to the journal" in r.getMessage()]
    assert said == [f"primus tracking: {len(missing)} records ({len(missing)} metrics, steps {missing[0]}-{missing[-1]}) "
                    f"could not be written to the journal {disk / 'run' / 'journal'} (No space left on device), so "
                    f"`primus tracking sync` and `primus report` cannot replay them. Delivered directly to: tensorboard "
                    f"{len(missing)}. Lost for: none."]
    end = journal_lines(disk / "run")[-1]["d"]
    assert end["event"] == "end" and end["not_journaled"] == {"metrics": len(missing)}


def test_sinks_that_open_on_a_full_disk_deliver_and_save_their_state_once_there_is_room(tmpfs, tmp_path,
                                                                                         mlflow_uri, mlflow_client,
                                                                                         primus_caplog):
    """The delivery process may open its sinks after the run directory's disk filled (a slow start under load):
    what a sink keeps there for a restart (TensorBoard's tags table written, MLflow's run id) cannot be written,
    and the sink delivers all the same; the state is written with its next save that finds room."""
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    run_dir = tmpfs("disk", "size=64k") / "run"
    run_dir.mkdir()
    state = RunState(run_dir)
    state.update("run", status="RUNNING")  # the run's own state file and lock, written at its start
    cfg = TrackingConfig(run_dir=run_dir, tensorboard=TensorBoardConfig(log_dir=tmp_path / "tb"),
                         mlflow=MlflowConfig(experiment_name="full-disk-state")).resolve()
    tensorboard, mlflow = (cls(SinkContext(name, run_dir, "r", "e", {}, {"host": "h"}, state, cfg))
                           for name, cls in ((SinkName.TENSORBOARD, TensorBoardSink), (SinkName.MLFLOW, MlflowSink)))
    filler = fill(run_dir.parent)
    records = [Record(METRICS, step, 1_000 + step, {"loss": step / 2}, end=step + 1) for step in range(3)]
    for sink in tensorboard, mlflow:
        sink.open()
        sink.write(records)
    assert [s for s, _ in read_tb_scalars(tmp_path / "tb")["loss"]] == [0, 1, 2]
    assert [s for s, _ in mlflow_history(mlflow_client, mlflow.run_id, mlflow_key("loss"))] == [0, 1, 2]
    said = [r.getMessage() for r in primus_caplog.records if "could not save" in r.getMessage()]
    assert len(said) == 2 and all("No space left on device" in line for line in said), said
    assert state.section("mlflow") == {} and state.section("tensorboard") == {}

    filler.unlink()
    mlflow.close("FINISHED", complete=True)  # its next save: the run's end, and the run id it kept
    tensorboard.context.save()
    assert state.section("mlflow")["run_id"] == mlflow.run_id and state.section("mlflow")["terminated"] == "FINISHED"
    assert state.section("tensorboard") == {"tags_written": True}
    tensorboard.close("FINISHED", complete=True)
