"""The One-Logger sink on the real nv-one-logger (2.3.1) and real runs of the tracking core (no trainer): each attempt
of a run is one application in ``<run_dir>/one_logger/attempt-<n>.jsonl`` (the library's own file exporter) with the
journal's times, its training loop, the iterations summarised, its checkpoint save with its iteration, and the
project, run name and app tag given; a relaunch and ``primus tracking sync`` write each attempt once; an exporter
that raises, at its start or on every record, leaves the file and the other trackers complete; OTLP reaches a real
HTTP endpoint that decodes the protobuf (tests/support/otlp_receiver.py). The trainers' runs:
tests/backends/*/test_*one_logger*.py."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from nv_one_logger.exporter.exporter import BaseExporter
from overrides import override
from support.one_logger_files import attempts, attrs, name_of, named, outline, records
from support.otlp_receiver import OtlpReceiver
from support.readers import read_tb_scalars

from primus.tracking import OneLoggerConfig, TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.delivery.replay import sync_run
from primus.tracking.journal.records import LOADED, SAVE_START, SAVED
from primus.tracking.sinks.sink import SinkUnavailable
from primus.tracking.trackers import one_logger_app
from primus.tracking.trackers.one_logger import OneLoggerSink
from primus.tracking.trackers.one_logger_app import OneLoggerApp

ONE_LOGGER = OneLoggerConfig(project="proj", app_tag_run_name="app", app_tag_run_version="1.2.3", global_batch_size=8,
                             seq_length=128, train_iterations=6)


def shape(recs: list[dict]) -> list[tuple]:
    """What a record says, less what differs between two writes of it (span ids, the writing process)."""
    return [(r["type"], name_of(r), json.dumps(attrs(r) if r["type"] != "start" else r["start_event"], sort_keys=True))
            for r in recs]


def attempt(run_dir: Path, steps: range, save_at: int | None = None, loaded_at: int | None = None,
            delivery: str = "process") -> dict:
    """One process of a run: TensorBoard and One-Logger on; ``steps`` logged, a save after ``save_at`` (its start mark
    and its record 50 ms apart), a load of ``loaded_at`` first. Returns the run's stats."""
    cfg = TrackingConfig(run_dir=run_dir, tensorboard=TensorBoardConfig(log_dir=run_dir / "tb"), one_logger=ONE_LOGGER,
                         delivery=delivery)
    run = start_run(cfg)
    if loaded_at is not None:
        run.event(LOADED, path="/ckpt", iteration=loaded_at, seconds=0.2)
    for step in steps:
        time.sleep(0.02)
        run.log(step, {"lm loss": 1.0 / step})
        if step == save_at:
            run.event(SAVE_START, iteration=step)
            time.sleep(0.05)
            run.event(SAVED, iteration=step, path="/ckpt", artifact="a", alias=f"iter_{step}", seconds=0.05)
    stats = run.stats()
    run.finish()
    return stats


def test_a_run_is_one_application_with_its_loop_iterations_save_and_tags(tmp_path):
    run_dir = tmp_path / "run-a"
    attempt(run_dir, range(1, 5), save_at=2)
    assert sorted(p.name for p in (run_dir / "one_logger").iterdir()) == ["attempt-1.jsonl"]
    recs = records(run_dir / "one_logger" / "attempt-1.jsonl")
    assert [len(named(recs, "start", s)) for s in ("application", "training_loop", "checkpoint_save_sync")] == [1, 1, 1]
    assert [len(named(recs, "stop", s)) for s in ("application", "training_loop", "checkpoint_save_sync")] == [1, 1, 1]
    [success] = named(recs, "event", "save_checkpoint_success")
    assert attrs(success)["current_iteration"] == 2 and attrs(success)["save_checkpoint_success_count"] == 1
    assert attrs(success)["productive_train_iterations"] == 2
    last = named(recs, "event", "training_metrics_update")[-1]
    assert attrs(last)["num_iterations"] == 4 and attrs(last)["num_train_samples"] == 4 * 8  # steps 1..4, batch 8
    [init] = named(recs, "event", "one_logger_initialization")
    assert attrs(init)["session_tag"] == "run-a"  # the run's name: one_logger_run_name unset
    assert {"one_logger_project:proj", "app_tag_run_name:app", "app_tag_run_version:1.2.3",
            "app_tag:app_1.2.3_8_1_128"} <= set(attrs(init)["custom_metadata"])
    [config] = named(recs, "event", "update_training_telemetry_config")
    assert attrs(config)["perf_tag"] == "app_1.2.3_8_1_128" and attrs(config)["global_batch_size"] == 8
    # the journal's times: the save span lasts from its start mark to its record
    journal = [json.loads(line) for f in sorted((run_dir / "journal").glob("*.jsonl")) for line in f.read_text().splitlines()]
    mark, done = (next(r["t"] for r in journal if r["d"].get("event") == e) for e in (SAVE_START, SAVED))
    [save_stop] = named(recs, "stop", "checkpoint_save_sync")
    assert abs(attrs(save_stop)["duration_msec"] - (done - mark)) <= 1  # the library rounds down to a millisecond


def test_a_relaunch_and_sync_write_each_attempt_once(tmp_path):
    run_dir = tmp_path / "relaunched"
    attempt(run_dir, range(1, 4), save_at=2)
    attempt(run_dir, range(3, 6), save_at=5, loaded_at=2)
    files = attempts(run_dir)
    assert list(files) == ["attempt-1.jsonl", "attempt-2.jsonl"]
    for recs in files.values():
        assert len(named(recs, "start", "application")) == len(named(recs, "stop", "application")) == 1
        assert len(named(recs, "event", "save_checkpoint_success")) == 1
    [loop] = named(files["attempt-2.jsonl"], "start", "training_loop")
    assert attrs(loop)["train_iterations_start"] == 2  # resumed from the checkpoint of iteration 2
    assert len(named(files["attempt-2.jsonl"], "complete", "checkpoint_load")) == 1

    assert sync_run(run_dir, timeout_s=60).ok  # nothing left to deliver: the files stay
    (run_dir / "cursors" / "one_logger.json").unlink()  # the worst a killed delivery leaves: replay from the start
    assert sync_run(run_dir, timeout_s=60).ok
    again = attempts(run_dir)
    assert {name: shape(recs) for name, recs in again.items()} == {name: shape(recs) for name, recs in files.items()}


def test_times_of_a_run_two_days_old_are_kept(tmp_path):
    """The library refuses times ten hours old: a sync days later needs its clock set to the journal's (the private
    ``nv_one_logger.core.time.time`` that OneLoggerApp replaces; this fails if the pinned release moves it)."""
    t0 = int((time.time() - 2 * 86400) * 1000)
    app = OneLoggerApp(ONE_LOGGER.__class__(run_name="old", global_batch_size=8), tmp_path / "a.jsonl", t0)
    app.step(t0 + 1000, 1)
    app.save_started(t0 + 1500, 1)
    app.saved(t0 + 4500, 1, 3.0)
    app.step(t0 + 5000, 2)
    app.end(t0 + 6000)
    recs = records(tmp_path / "a.jsonl")
    [save] = named(recs, "stop", "checkpoint_save_sync")
    assert attrs(save)["duration_msec"] == 3000
    [application] = named(recs, "stop", "application")
    assert attrs(application)["duration_msec"] == 6000
    assert named(recs, "start", "application")[0]["start_event"]["attributes"]["timestamp_msec"] == t0


class RaisingExporter(BaseExporter):
    """A dead backend: its start, or every export, raises."""

    def __init__(self, at_start: bool):
        super().__init__()
        self.at_start = at_start

    @override
    def initialize(self) -> None:
        super().initialize()
        if self.at_start:
            raise ConnectionError("backend unreachable (initialize)")

    @override
    def export_start(self, span) -> None:
        raise ConnectionError("backend unreachable")

    @override
    def export_stop(self, span) -> None:
        raise ConnectionError("backend unreachable")

    @override
    def export_event(self, event, span) -> None:
        raise ConnectionError("backend unreachable")

    @override
    def export_error(self, event, span) -> None:
        raise ConnectionError("backend unreachable")

    @override
    def export_telemetry_data_error(self, error) -> None:
        raise ConnectionError("backend unreachable")

    @override
    def close(self) -> None:
        raise ConnectionError("close failed too")


@pytest.mark.parametrize("at_start", [True, False], ids=["at-start", "every-export"])
def test_an_exporter_that_raises_leaves_the_file_and_the_other_trackers_complete(tmp_path, monkeypatch, at_start):
    reference = tmp_path / "reference"
    attempt(reference, range(1, 5), save_at=2, delivery="thread")
    monkeypatch.setattr(one_logger_app, "_otlp_exporters", lambda: (RaisingExporter(at_start),))
    run_dir = tmp_path / "raising"
    stats = attempt(run_dir, range(1, 5), save_at=2, delivery="thread")
    assert stats["sinks"]["one_logger"]["failures"] == 0 and stats["sinks"]["tensorboard"]["failures"] == 0
    assert [s for s, _ in read_tb_scalars(run_dir / "tb")["lm loss"]] == [1, 2, 3, 4]
    got, want = (records(d / "one_logger" / "attempt-1.jsonl") for d in (run_dir, reference))
    assert outline(got) == outline(want)


def test_spans_reach_an_otlp_endpoint(tmp_path, monkeypatch):
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        attempt(tmp_path / "otlp", range(1, 4), save_at=2, delivery="thread")
        receiver.wait_for(lambda r: any(s.name == "application" for s in r.received.spans), 30, "application span")
        spans = {s.name: s for s in receiver.received.spans}
    assert {"application", "training_loop", "checkpoint_save_sync"} <= set(spans)
    save = spans["checkpoint_save_sync"]
    assert save.attributes["current_iteration"] == 2
    recs = records(tmp_path / "otlp" / "one_logger" / "attempt-1.jsonl")  # the file has the same times
    [stop] = named(recs, "stop", "checkpoint_save_sync")
    # the same times: the span's nanoseconds come from float seconds, the file's duration is whole milliseconds
    # (each end rounded down)
    assert abs((save.end_time_unix_nano - save.start_time_unix_nano) / 1e6 - attrs(stop)["duration_msec"]) < 2


def test_without_nv_one_logger_the_sink_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "nv_one_logger.training_telemetry.api.callbacks", None)
    from primus.tracking.journal.run_state import RunState
    from primus.tracking.trackers.context import SinkContext

    cfg = TrackingConfig(run_dir=tmp_path, one_logger=ONE_LOGGER)
    sink = OneLoggerSink(SinkContext("one_logger", tmp_path, "r", "e", {}, {}, RunState(tmp_path), cfg))
    with pytest.raises(SinkUnavailable, match=r"primus-tracking\[one-logger\]"):
        sink.open()
    shutil.rmtree(tmp_path / "one_logger", ignore_errors=True)
