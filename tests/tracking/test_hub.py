"""The hub and its workers with no tracker at all: the journal is the record, intake never raises,
memory is bounded with counters, and a sink that fails gets every record exactly once."""

import logging
import time

import pytest
from support.journal_files import journal_lines, without_goodput

from primus.tracking import TrackingConfig, start_run
from primus.tracking.delivery.worker import SinkWorker
from primus.tracking.hub import MetricsHub
from primus.tracking.journal.reader import JournalReader, journal_end
from primus.tracking.journal.records import METRICS
from primus.tracking.journal.run_state import CursorStore, RunDirBusyError
from primus.tracking.journal.writer import JournalWriter
from primus.tracking.sinks.sink import Sink


def journal(run):
    return journal_lines(run.run_dir)


def test_bad_input_is_counted_never_raised(tmp_path):
    run = start_run(TrackingConfig(run_dir=tmp_path))
    run.log("not a step", {"loss": 1.0})
    run.log(1, None)
    run.log(2, {"loss": object(), "ok": 2})
    run.log(3, {"nan": float("nan")})
    run.finish()
    metrics = [r for r in journal(run) if r["k"] == METRICS]
    assert [(r["s"], without_goodput(r["d"])) for r in metrics[:1]] == [(2, {"ok": 2.0})]
    assert metrics[1]["s"] == 3 and metrics[1]["d"]["nan"] != metrics[1]["d"]["nan"]
    assert journal(run)[-1]["d"]["dropped"] == {"invalid_step_or_only": 1, "invalid_value": 1, "not_a_mapping": 1}


def test_memory_is_bounded_by_pending_records(tmp_path):
    run = start_run(TrackingConfig(run_dir=tmp_path, pending_records=10))
    for step in range(5000):  # far faster than the hub's 0.1 s tick
        run.log(step, {"loss": 1.0})
    run.finish()
    end = journal(run)[-1]["d"]
    kept = sum(r["k"] == METRICS for r in journal(run))
    assert end["dropped"]["queue_full"] > 0 and kept + end["dropped"]["queue_full"] == 5000


def test_the_old_journal_cap_is_ignored_with_a_warning_and_nothing_is_dropped(tmp_path, primus_caplog):
    run = start_run(TrackingConfig(run_dir=tmp_path, journal_max_bytes=2000))
    for step in range(200):
        run.log(step, {"loss": 1.0})
    run.finish()
    warnings = [r.getMessage() for r in primus_caplog.records if "journal_max_bytes=2000 is ignored" in r.getMessage()]
    assert len(warnings) == 1
    assert [r["s"] for r in journal(run) if r["k"] == METRICS] == list(range(200))
    assert journal(run)[-1]["d"]["dropped"] == {}


def test_one_process_per_run_dir(tmp_path):
    run = start_run(TrackingConfig(run_dir=tmp_path))
    with pytest.raises(RunDirBusyError, match="its own run_dir"):
        start_run(TrackingConfig(run_dir=tmp_path))
    run.finish()
    start_run(TrackingConfig(run_dir=tmp_path)).finish()  # free again after finish


class FlakySink(Sink):
    """Fails every other write: the worker must retry and deliver each record exactly once."""

    name = "flaky"

    def __init__(self):
        self.got, self.calls, self.closed = [], 0, None

    def open(self):
        return "target"

    def chunks(self, records):
        for i in range(0, len(records), 3):
            yield records[i:i + 3]

    def write(self, records):
        self.calls += 1
        if self.calls % 2:
            raise ConnectionError("server away")
        self.got += [r.step for r in records if r.kind == METRICS]

    def close(self, status, complete):
        self.closed = (status, complete)


def test_worker_retries_until_every_record_is_delivered_once(tmp_path, monkeypatch, primus_caplog):
    monkeypatch.setattr("primus.tracking.delivery.worker.BACKOFF_FIRST_S", 0.01)
    run = start_run(TrackingConfig(run_dir=tmp_path / "run"))
    for step in range(20):
        run.log(step, {"loss": float(step)})
    run.finish()
    end = journal_end(run.run_dir)
    sink, cursors = FlakySink(), CursorStore(run.run_dir)
    worker = SinkWorker(sink, run.run_dir, cursors)
    worker.start()
    worker.notify(end)
    worker.close("FINISHED", time.monotonic() + 30)
    assert worker.join(time.monotonic() + 30)
    assert sink.got == list(range(20)) and sink.closed == ("FINISHED", True)
    assert worker.failures > 0 and "flaky failed to deliver (ConnectionError: server away)" in primus_caplog.text
    assert cursors.load("flaky", "target") == end
    assert cursors.load("flaky", "another target") == 0
    records, read_to = JournalReader(run.run_dir).read(0)
    assert read_to == end and records[-1].data["event"] == "end"


def test_importing_the_tracking_core_imports_no_tracker_and_no_backend():
    import subprocess
    import sys

    code = ("import sys, primus.tracking, primus.tracking.delivery.replay; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'mlflow', 'wandb', 'tensorboard', 'megatron', 'torchtitan') or m.startswith('primus.backends')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


class SecretFailingSink(Sink):
    name = "secretive"

    def open(self):
        raise ConnectionError("API request to http://u:hunter2hunter2@host failed")

    def write(self, records):
        pass


def test_a_broken_log_handler_does_not_print_the_unredacted_error(tmp_path, capsys):
    class Broken(logging.Handler):
        def emit(self, record):  # as a StreamHandler on a closed stream
            try:
                raise OSError("stream closed")
            except OSError:
                self.handleError(record)  # prints its own error and the exception being handled

    logger = logging.getLogger("primus.tracking")
    broken = Broken()
    logger.addHandler(broken)
    try:
        worker = SinkWorker(SecretFailingSink(), tmp_path, CursorStore(tmp_path))
        worker.start()
        worker.close("FINISHED", time.monotonic() + 0.5)
        worker.join(time.monotonic() + 5)
    finally:
        logger.removeHandler(broken)
    err = capsys.readouterr().err
    assert "--- Logging error ---" in err and "hunter2" not in err


def test_flush_waits_only_for_the_sinks_it_names(tmp_path):
    """MaxText flushes TensorBoard every log_period steps: that must neither wait for nor hurry a slow MLflow."""
    from primus.tracking import MlflowConfig, TensorBoardConfig

    run = start_run(TrackingConfig(run_dir=tmp_path / "run", exit_deadline_s=1, delivery="thread",
                                   tensorboard=TensorBoardConfig(tmp_path / "tb"),
                                   mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:9")))  # nothing listens
    run.log(1, {"loss": 1.0})
    assert run.flush(60, sinks=("tensorboard",))
    assert run.flush(1) is False  # MLflow has nothing
    run.finish()


def test_a_resumed_hub_tracks_from_the_step_after_the_last_tracked_one_per_destination(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100, tracked_until={None: 5, ("tb",): 2})
    hub.start()
    for step in range(3, 9):
        hub.log(step, {"loss": 1.0})
    for step in range(1, 5):
        hub.log(step, {"loss": 1.0}, only=["tb"])
    hub.close("FINISHED", time.monotonic() + 30)
    tracked = [(r["s"], r.get("o")) for r in journal_lines(tmp_path) if r["k"] == METRICS]
    assert tracked == [(6, None), (7, None), (8, None), (3, ["tb"]), (4, ["tb"])]
    assert hub.dropped == {"already_tracked": 5}
