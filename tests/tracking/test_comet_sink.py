"""The Comet sink, offline, on a fake run's records (comet_sink_drive.py, on .venv-bridge: the one environment with
comet_ml): the archive comet_ml leaves in the run directory holds every step's metrics once under the hub's names,
the run's params, tags and name, and its end status; run.json keeps the experiment key for a restart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.readers import comet_archive, comet_metrics, comet_others
from support.this_primus import this_primus_folder, with_this_primus

REPO = Path(__file__).resolve().parents[2]
BRIDGE_PYTHON = REPO / ".venv-bridge" / "bin" / "python"
DRIVE = Path(__file__).with_name("comet_sink_drive.py")


def drive(tmp_path_factory, mode: str) -> tuple[Path, subprocess.CompletedProcess]:
    """The sink on .venv-bridge, in a home of its own (no ~/.comet.config) and without COMET_* variables."""
    if not BRIDGE_PYTHON.exists():
        pytest.skip(f"{BRIDGE_PYTHON} is missing: scripts/setup-bridge-venv.sh builds it (with comet_ml)")
    run_dir, home = tmp_path_factory.mktemp("comet-run"), tmp_path_factory.mktemp("home")
    primus = this_primus_folder(tmp_path_factory.mktemp("primus"))
    env = with_this_primus(primus, {"PATH": "/usr/bin:/bin", "HOME": str(home)})
    done = subprocess.run([BRIDGE_PYTHON, DRIVE, run_dir, mode], env=env, capture_output=True, text=True, timeout=120)
    return run_dir, done


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
