"""The Comet sink, offline, on a fake run's records (comet_sink_drive.py, on .venv-bridge: the one environment with
comet_ml): the archive comet_ml leaves in the run directory holds every step's metrics once under the hub's names,
the run's params, tags and name, and its end status; run.json keeps the experiment key for a restart, which continues
that experiment, as `primus tracking sync` does with what a killed process did not deliver (real runs and archives).
Which comet_ml class a start uses, by what run.json kept, is unit-tested on a stand-in for comet_ml."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.readers import comet_archive, comet_archives, comet_metrics, comet_others
from support.this_primus import this_primus_folder, with_this_primus

from primus.tracking.journal.run_state import RunState
from primus.tracking.settings.config import CometConfig, TrackingConfig
from primus.tracking.sinks.sink import Sink
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.registry import build_sinks, sink_names

REPO = Path(__file__).resolve().parents[2]
BRIDGE_PYTHON = REPO / ".venv-bridge" / "bin" / "python"
DRIVE = Path(__file__).with_name("comet_sink_drive.py")
RUN_CHILD = Path(__file__).with_name("comet_run_child.py")


def on_bridge(tmp_path_factory) -> Callable[..., subprocess.CompletedProcess]:
    """Runs of .venv-bridge's Python on this checkout's primus, in a home of its own (no ~/.comet.config) and without
    COMET_* variables."""
    if not BRIDGE_PYTHON.exists():
        pytest.skip(f"{BRIDGE_PYTHON} is missing: scripts/setup-bridge-venv.sh builds it (with comet_ml)")
    home = tmp_path_factory.mktemp("home")
    primus = this_primus_folder(tmp_path_factory.mktemp("primus"))
    env = with_this_primus(primus, {"PATH": "/usr/bin:/bin", "HOME": str(home)})
    return lambda *args: subprocess.run([BRIDGE_PYTHON, *args], env=env, capture_output=True, text=True, timeout=120)


def drive(tmp_path_factory, mode: str) -> tuple[Path, subprocess.CompletedProcess]:
    run_dir = tmp_path_factory.mktemp("comet-run")
    return run_dir, on_bridge(tmp_path_factory)(DRIVE, run_dir, mode)


@pytest.fixture(scope="module")
def archived(tmp_path_factory) -> Path:
    run_dir, done = drive(tmp_path_factory, "offline")
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir


def test_every_step_once_under_the_hubs_names(archived):
    _, messages = comet_archive(archived / "comet")
    metrics = comet_metrics(messages)
    assert metrics["lm loss"] == [(1, 2.5), (2, 2.25), (3, 2.0)]
    assert metrics["perf/mfu"] == [(1, 0.5), (2, 0.5), (3, 0.5)]


def test_params_tags_name_and_status_once(archived):
    experiment, messages = comet_archive(archived / "comet")
    params = [m["payload"]["param"] for m in messages if m["type"] == "parameter_msg"]
    assert [(p["paramName"], p["paramValue"]) for p in params if p["source"] == "manual"] == [("lr", 0.1)]
    others = comet_others(messages)
    assert others["Name"] == "cometed" and others["team"] == "x" and others["primus/status"] == "FINISHED"
    assert sorted(experiment["tags"]) == ["a", "b"] and experiment["project_name"] == "p"


def test_the_experiment_key_is_kept_for_a_restart(archived):
    experiment, _ = comet_archive(archived / "comet")
    key = json.loads((archived / "run.json").read_text())["comet"]["key"]
    assert experiment["offline_id"] == key and (archived / "comet" / f"{key}.zip").exists()


def test_online_without_an_api_key_is_refused_once_naming_the_fixes(tmp_path_factory):
    run_dir, done = drive(tmp_path_factory, "online")
    assert done.returncode == 3, done.stderr[-3000:]  # SinkUnavailable: the worker stops the sink, no retries
    assert "export COMET_API_KEY" in done.stdout and "COMET_MODE=offline" in done.stdout
    assert not (run_dir / "comet").exists()


def test_sync_continues_the_experiment_with_what_a_killed_restart_did_not_deliver_nothing_twice(tmp_path_factory):
    """A run's first process ends (its archive has steps 0..4); the restart logs 5..11 and is SIGKILLed before Comet
    got any; `primus tracking sync` puts 5..11 and the KILLED status into a continuation of the same experiment."""
    run = on_bridge(tmp_path_factory)
    run_dir = tmp_path_factory.mktemp("synced") / "run"
    first = run(RUN_CHILD, run_dir, "0", "4", "finish")
    assert first.returncode == 0, first.stderr[-3000:]
    [created] = comet_archives(run_dir / "comet")
    restart = run(RUN_CHILD, run_dir, "5", "11", "kill")
    assert restart.returncode == -signal.SIGKILL, restart.stderr[-3000:]
    assert list(comet_archives(run_dir / "comet")) == [created]  # the restart's steps reached the journal only

    synced = run("-m", "primus.cli.main", "tracking", "sync", run_dir)
    assert synced.returncode == 0, synced.stderr[-3000:]
    assert "comet: delivered, status KILLED" in synced.stdout
    archives = comet_archives(run_dir / "comet")
    [continued] = set(archives) - {created}
    key = json.loads((run_dir / "run.json").read_text())["comet"]["key"]
    assert created == f"{key}.zip" and continued.startswith(f"{key}-")
    assert f"comet upload {run_dir / 'comet' / created} {run_dir / 'comet' / continued}" in synced.stdout
    (_, first_messages), (experiment, messages) = archives[created], archives[continued]
    assert experiment["offline_id"] == key and experiment["resume_strategy"] == "get"  # appended on upload
    assert comet_metrics(first_messages)["lm loss"] == [(step, step / 4) for step in range(5)]
    assert comet_metrics(messages)["lm loss"] == [(step, step / 4) for step in range(5, 12)]
    assert comet_others(first_messages)["primus/status"] == "FINISHED"
    assert comet_others(messages)["primus/status"] == "KILLED"
    assert not [m for m in messages if m["type"] == "parameter_msg" and m["payload"]["param"]["source"] == "manual"]

    again = run("-m", "primus.cli.main", "tracking", "sync", run_dir)
    assert "nothing to deliver" in again.stdout and comet_archives(run_dir / "comet").keys() == archives.keys()


class FakeComet:
    """comet_ml's experiment classes as the sink calls them (its key handling is ours to test, on any venv): each
    records which class started which key, and whether the experiment's name and params were logged."""

    def __init__(self):
        self.started: list[tuple[str, str, bool]] = []  # (class, experiment_key, named)
        self.config = SimpleNamespace(get_api_key=lambda key, config: "k", get_config=lambda: {})
        for cls in ("Experiment", "ExistingExperiment", "OfflineExperiment", "ExistingOfflineExperiment"):
            setattr(self, cls, self._experiment_class(cls))

    def _experiment_class(self, cls: str):
        fake = self

        class FakeExperiment:
            def __init__(self, experiment_key, **_):
                fake.started.append((cls, experiment_key, False))

            def set_name(self, name):
                fake.started[-1] = (*fake.started[-1][:2], True)

            def __getattr__(self, _):  # add_tags, log_parameters, log_other, end, ...
                return lambda *args, **kwargs: None

        return FakeExperiment


@pytest.fixture
def fake_comet(monkeypatch):
    fake = FakeComet()
    monkeypatch.setitem(sys.modules, "comet_ml", fake)
    monkeypatch.setitem(sys.modules, "comet_ml.config", fake.config)
    return fake


def comet_sink(run_dir: Path, offline: bool) -> Sink:
    cfg = TrackingConfig(run_dir=run_dir, comet=CometConfig(offline=offline)).resolve({})
    [sink] = build_sinks(sink_names(cfg), cfg, RunMeta(run_name="r", experiment_name="e"), RunState(run_dir))
    return sink


def test_online_a_restart_continues_the_experiment_its_first_start_created(fake_comet, tmp_path):
    key = comet_sink(tmp_path, offline=False).open()  # the first process, killed without closing
    assert comet_sink(tmp_path, offline=False).open() == key  # the restart
    assert fake_comet.started == [("Experiment", key, True), ("ExistingExperiment", key, False)]


def test_offline_an_experiment_is_continued_only_once_an_archive_made_it(fake_comet, tmp_path):
    first = comet_sink(tmp_path, offline=True)
    key = first.open()
    assert comet_sink(tmp_path, offline=True).open() == key  # the first was killed before end(): no archive yet
    first.close("FINISHED", True)  # its archive now creates the experiment on upload
    assert comet_sink(tmp_path, offline=True).open() == key
    assert fake_comet.started == [
        ("OfflineExperiment", key, True),
        ("OfflineExperiment", key, True),
        ("ExistingOfflineExperiment", key, False),
    ]


def test_each_run_directory_has_its_own_key(fake_comet, tmp_path):
    keys = {comet_sink(tmp_path / name, offline=True).open() for name in ("a", "b")}
    assert len(keys) == 2 and all(len(key) == 32 for key in keys)  # comet_ml takes 32 to 50 characters
