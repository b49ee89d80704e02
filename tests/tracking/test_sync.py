"""`primus tracking sync` over a real journal, fast: a run directory as a run leaves it (meta.json, run.json,
the journal's segments) and a real plugin tracker (the demo distribution, which writes what it receives to a
file), no MLflow server. What each tracker is sent, the final status it is given, the cursor left behind, the
report and progress the command prints from, and the refusals that name the fix. The MLflow path end to end is
in test_sync_after_crash.py and test_plugin_sinks.py (slow: real servers, real delivery processes)."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections import Counter

import pytest
from support.plugin_dists import SINK_DOWN, read_sink_record
from support.readers import read_wandb_history, wandb_files, wandb_records, wandb_run_ids
from support.timing import wait_for

from primus.tracking.delivery.replay import SyncError, SyncProgress, sync_run
from primus.tracking.journal.files import DELIVERY_LOCK
from primus.tracking.journal.reader import journal_end, read_all
from primus.tracking.journal.records import METRICS, encode
from primus.tracking.journal.run_state import CursorStore, RunState, read_json
from primus.tracking.journal.writer import JournalWriter
from primus.tracking.tags.meta import RunMeta

STEPS = 12


@pytest.fixture
def run_dir(sink_plugin, tmp_path):
    """A run that logged STEPS steps to the demo tracker and delivered none of them (its delivery died)."""
    sink_plugin()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunMeta(params={"lr": 0.1}, tags={"team": "x"}, run_name="r", experiment_name="e", plugin_sinks=["demo"]).save(run_dir)
    writer = JournalWriter(run_dir, segment_bytes=400)  # several segments
    for step in range(STEPS):
        writer.append([encode(METRICS, step, 1000 + step, {"loss": step / 4})])
    writer.close()
    return run_dir


def _steps(run_dir):
    return [line["step"] for line in read_sink_record(run_dir) if "step" in line]


def _closes(run_dir):
    return [line for line in read_sink_record(run_dir) if "status" in line]


def test_a_run_that_died_running_is_delivered_whole_and_closed_killed(run_dir):
    RunState(run_dir).update("run", status="RUNNING")
    report = sync_run(run_dir, timeout_s=30)
    assert report.status == "KILLED" and report.ok and report.delivered == {"demo": True} and report.errors == {}
    assert _steps(run_dir) == list(range(STEPS))
    assert _closes(run_dir) == [{"status": "KILLED", "complete": True}]
    assert read_json(run_dir / "cursors" / "demo.json")["offset"] == journal_end(run_dir)
    assert report.wandb_offline_dir is None


def test_a_plugin_sink_gets_the_runs_settings_as_meta_json_kept_them(run_dir):
    assert sync_run(run_dir, timeout_s=30).ok
    opened = [line for line in read_sink_record(run_dir) if "open" in line]
    assert [(o["run_name"], o["experiment"], o["config"]) for o in opened] == [("r", "e", ["e", "r", False, False])]


@pytest.mark.parametrize("saved", [None, "FINISHED", "FAILED"])
def test_the_status_the_run_asked_for_is_kept(run_dir, saved):
    if saved:
        RunState(run_dir).update("run", status=saved)
    report = sync_run(run_dir, timeout_s=30)
    assert report.status == (saved or "KILLED")  # no status saved: the run never got to finish
    assert _closes(run_dir) == [{"status": report.status, "complete": True}]


def test_a_second_sync_sends_nothing_again_and_steps_logged_since_only_once(run_dir):
    sync_run(run_dir, timeout_s=30)
    sync_run(run_dir, timeout_s=30)
    assert _steps(run_dir) == list(range(STEPS))
    writer = JournalWriter(run_dir, segment_bytes=400)  # the job relaunched and logged more
    writer.append([encode(METRICS, STEPS, 2000, {"loss": 0.0})])
    writer.close()
    assert sync_run(run_dir, timeout_s=30).ok
    assert _steps(run_dir) == list(range(STEPS + 1))
    assert len({line["open"] for line in read_sink_record(run_dir) if "open" in line}) == 1  # one tracker run


def test_progress_ends_with_everything_sent(run_dir):
    seen: list[SyncProgress] = []
    started = time.monotonic()
    sync_run(run_dir, timeout_s=60, progress=seen.append, progress_every_s=0.01)
    assert time.monotonic() - started < 60 / 2  # done when delivered, not at the timeout (a second or two here)
    end = journal_end(run_dir)
    assert seen and seen[-1] == SyncProgress("demo", records=STEPS, bytes_sent=end, bytes_total=end)
    assert all(p.sink == "demo" and 0 <= p.bytes_sent <= p.bytes_total == end for p in seen)
    assert [p.bytes_sent for p in seen] == sorted(p.bytes_sent for p in seen)


def test_progress_counts_from_the_saved_cursor(run_dir):
    sync_run(run_dir, timeout_s=30)
    seen: list[SyncProgress] = []
    sync_run(run_dir, timeout_s=30, progress=seen.append)
    assert seen[-1] == SyncProgress("demo", records=0, bytes_sent=0, bytes_total=0)


def test_a_tracker_still_down_is_reported_not_delivered_with_its_error(run_dir):
    (run_dir / SINK_DOWN).touch()
    seen: list[SyncProgress] = []
    started = time.monotonic()
    report = sync_run(run_dir, timeout_s=1.0, progress=seen.append, progress_every_s=0.2)
    assert time.monotonic() - started < 1.0 + 10  # gives up at its timeout (plus the box's load)
    assert not report.ok and report.delivered == {"demo": False}
    assert "the demo tracker is down" in report.errors["demo"]
    assert _steps(run_dir) == [] and CursorStore(run_dir).offset("demo") == 0
    assert seen[-1].bytes_sent == 0 and seen[-1].bytes_total == journal_end(run_dir)
    assert len(seen) <= 1.0 / 0.2 + 2  # a line every progress_every_s at most, and the last one


def test_an_offline_wandb_run_already_delivered_names_its_folder_for_wandb_sync(run_dir):
    meta = RunMeta.load(run_dir)
    meta.wandb = {"project": "p", "mode": "offline"}
    meta.save(run_dir)
    RunState(run_dir).update("wandb", id="abc123", mode="offline", sync_dir="/runs/wandb/offline-run-abc123")
    CursorStore(run_dir).save("wandb", "abc123", journal_end(run_dir))  # its delivery had sent everything
    report = sync_run(run_dir, timeout_s=30)
    assert report.wandb_offline_dir == "/runs/wandb/offline-run-abc123"
    assert report.delivered == {"demo": True}  # nothing left for W&B: no W&B sink opened


def _record_ends(run_dir):
    return [r.end for r in read_all(run_dir)]


@pytest.mark.parametrize("opened_before", [True, False])
def test_a_wandb_run_that_lags_the_journal_gets_the_rest_in_the_same_run(run_dir, wandb_offline, opened_before):
    """The W&B delivery died after 5 steps: sync resumes that W&B run (offline here) from its cursor and says
    which folder `wandb sync` uploads, whether or not the run had got as far as opening W&B before it died."""
    meta = RunMeta.load(run_dir)
    meta.wandb = {"project": "lagging", "mode": "offline", "save_dir": str(wandb_offline), "init_timeout_s": 30.0}
    meta.save(run_dir)
    RunState(run_dir).update("wandb", id="lag12345", **({"mode": "offline"} if opened_before else {}))
    CursorStore(run_dir).save("wandb", "lag12345", _record_ends(run_dir)[4])  # steps 0..4 were delivered
    report = sync_run(run_dir, timeout_s=60)
    assert report.delivered == {"wandb": True, "demo": True}, report.errors

    def loss_rows():
        return [r for r in read_wandb_history(wandb_offline) if "loss" in r]

    # finish() returns once W&B's service has the records; it writes the offline file a moment later (seen empty
    # right after the sync returned, whole a second later, on a loaded box)
    wait_for(lambda: len(loss_rows()) >= STEPS - 5, 30, what="W&B's service to write the offline run file")
    rows = loss_rows()
    assert [r["_step"] for r in rows] == list(range(5, STEPS)), _what_wandb_wrote(wandb_offline)
    assert [r["loss"] for r in rows] == [step / 4 for step in range(5, STEPS)]
    assert wandb_run_ids(wandb_offline) == {"lag12345"}
    saved = RunState(run_dir).section("wandb")
    assert saved["mode"] == "offline" and report.wandb_offline_dir == saved["sync_dir"]
    assert str(wandb_offline) in saved["sync_dir"] and "lag12345" in saved["sync_dir"]
    assert CursorStore(run_dir).load("wandb", "lag12345") == journal_end(run_dir)


def _what_wandb_wrote(root):
    """For a failure's message: each run file and its record types (this test once read no history under load)."""
    return {str(p): Counter(r.WhichOneof("record_type") for r in wandb_records(p)) for p in wandb_files(root)}


def test_a_wandb_id_left_in_run_json_without_wandb_in_the_runs_settings_opens_no_wandb_run(run_dir, wandb_offline):
    """A run directory reused with W&B turned off keeps the old run's W&B id in run.json: nothing goes there."""
    RunState(run_dir).update("wandb", id="stale123")
    assert sync_run(run_dir, timeout_s=30).delivered == {"demo": True}
    assert wandb_run_ids(wandb_offline) == set()


def test_a_directory_without_a_journal_is_refused_naming_it(tmp_path):
    with pytest.raises(SyncError, match=f"{tmp_path} has no journal .*give the run directory of a tracked run"):
        sync_run(tmp_path)


def test_a_plugin_sink_no_longer_installed_is_refused_naming_it(run_dir, monkeypatch):
    monkeypatch.setenv("PRIMUS_SINKS", "")
    meta = RunMeta.load(run_dir)
    meta.plugin_sinks = ["nosuch"]
    meta.save(run_dir)
    with pytest.raises(SyncError, match=r"the run had plugin sinks \['nosuch'\]: .*nosuch"):
        sync_run(run_dir, timeout_s=30)


def test_a_masked_mlflow_uri_is_refused_before_anything_is_sent(run_dir, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    meta = RunMeta.load(run_dir)
    meta.mlflow = {"tracking_uri": "https://user:******@mlflow.example"}
    meta.save(run_dir)
    with pytest.raises(SyncError, match=r"was saved as 'https://user:\*\*\*\*\*\*@mlflow.example': pass "
                                        r"--tracking-uri or set MLFLOW_TRACKING_URI"):
        sync_run(run_dir, timeout_s=30)
    assert read_sink_record(run_dir) == []


def test_sync_waits_for_a_delivery_process_still_sending_then_delivers(run_dir, capsys):
    held = open(run_dir / DELIVERY_LOCK, "a")  # another open file: flock excludes it as it would another process
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(0.5, held.close).start()  # that process finishes
    assert sync_run(run_dir, timeout_s=30).ok
    assert _steps(run_dir) == list(range(STEPS))
    err = capsys.readouterr().err
    assert err.count(f"waiting for the delivery process still sending {run_dir}'s journal to finish") == 1


def test_sync_gives_up_on_a_delivery_process_that_outlasts_its_timeout(run_dir):
    held = open(run_dir / DELIVERY_LOCK, "a")
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        with pytest.raises(SyncError, match="a delivery process is still sending .*give a longer --timeout"):
            sync_run(run_dir, timeout_s=0.5)
    finally:
        held.close()
    assert read_sink_record(run_dir) == []
    assert sync_run(run_dir, timeout_s=30).ok  # its lock and the run directory's were let go


@pytest.mark.parametrize(("given", "saved", "env", "used"), [
    ("given", "saved", "env", "given"), (None, "saved", "env", "saved"), (None, "masked", "env", "env")])
def test_the_mlflow_store_is_the_one_given_else_the_saved_one_else_the_environments(run_dir, monkeypatch, given,
                                                                                  saved, env, used):
    stores = {name: (run_dir.parent / name).as_uri() for name in ("given", "saved", "env")}  # local MLflow stores
    stores["masked"] = "https://user:******@mlflow.example"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", stores[env])
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store for those who ask
    meta = RunMeta.load(run_dir)
    meta.mlflow = {"tracking_uri": stores[saved], "experiment_name": "e"}
    meta.save(run_dir)
    report = sync_run(run_dir, timeout_s=60, tracking_uri=given and stores[given])
    assert report.delivered == {"mlflow": True, "demo": True}, report.errors
    assert RunState(run_dir).section("mlflow")["tracking_uri"] == stores[used]
    assert [p.name for p in run_dir.parent.iterdir() if p.name in stores] == [used]


def _with_comet(run_dir, offline_dir):
    meta = RunMeta.load(run_dir)
    meta.comet = {"project": "p", "name": "r", "tags": ["a"], "offline": True, "offline_dir": str(offline_dir)}
    meta.save(run_dir)


@pytest.mark.parametrize("key", ["k" * 32, None])  # None: the run's Comet never started (e.g. no API key online)
def test_a_comet_experiment_that_lags_the_journal_is_opened_with_the_runs_settings(run_dir, monkeypatch, key):
    """comet_ml cannot be imported here (it is in .venv-bridge; test_comet_sink.py syncs real archives there): the
    sink's refusal shows sync chose Comet and built it from meta.json's settings."""
    monkeypatch.setitem(sys.modules, "comet_ml", None)
    _with_comet(run_dir, run_dir / "comet")
    if key:
        RunState(run_dir).update("comet", key=key, offline=True, exists=True)
        CursorStore(run_dir).save("comet", key, _record_ends(run_dir)[4])  # steps 0..4 were delivered
    report = sync_run(run_dir, timeout_s=30)
    assert report.delivered == {"comet": False, "demo": True}
    assert "comet_ml is not importable" in report.errors["comet"]


def test_an_online_comet_experiment_has_no_archives_to_upload(run_dir):
    """An online experiment's stale archives (an earlier offline try of the same key) are not the run's to upload."""
    meta = RunMeta.load(run_dir)
    meta.comet = {"project": "p", "name": "r", "tags": [], "offline": False, "offline_dir": str(run_dir)}
    meta.save(run_dir)
    key = "k" * 32
    RunState(run_dir).update("comet", key=key, offline=False, exists=True)
    CursorStore(run_dir).save("comet", key, journal_end(run_dir))
    (run_dir / f"{key}.zip").touch()
    report = sync_run(run_dir, timeout_s=30)
    assert report.delivered == {"demo": True} and report.comet_archives == []


def test_a_comet_experiment_with_every_record_opens_no_comet_and_names_its_archives_in_upload_order(run_dir):
    offline_dir = run_dir.parent / "archives"
    _with_comet(run_dir, offline_dir)
    key = "k" * 32
    RunState(run_dir).update("comet", key=key, offline=True, exists=True)
    CursorStore(run_dir).save("comet", key, journal_end(run_dir))
    offline_dir.mkdir()
    for age, name in enumerate([f"{key}-older.zip", f"{key}-newer.zip", f"{key}.zip", "other.zip"]):
        (offline_dir / name).touch()
        os.utime(offline_dir / name, (1000 + age, 1000 + age))
    report = sync_run(run_dir, timeout_s=30)
    assert report.delivered == {"demo": True}
    assert report.comet_archives == [str(offline_dir / name) for name in (f"{key}.zip", f"{key}-older.zip",
                                                                          f"{key}-newer.zip")]
