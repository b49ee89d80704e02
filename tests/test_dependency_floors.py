"""The core's lower bounds in setup.cfg are true: with exactly the lowest release each `install_requires` entry
allows first on the path (.venv/floors, installed by `make setup` through scripts/setup-dependency-floors.sh),
the core's fast unit tests pass. A floor set below what the code needs fails here, not at a user's site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "setup-dependency-floors.sh"
FOLDER = ROOT / ".venv" / "floors"
# What each dependency does in the core, and the unit tests that exercise it there.
CORE_TESTS = [
    "tests/patches",  # wrapt: install, switch off and remove wrappers; packaging: upstream version ranges
    "tests/config/test_schema_validation.py",  # pydantic: values checked against upstream's annotations
    "tests/config/test_schema_details.py",
    "tests/config/test_param_bounds.py",  # pydantic: Field bounds
    "tests/config/test_json_schema.py",  # pydantic: its JSON Schema of upstream's types
    "tests/config/test_upstream_tables.py",
    "tests/config/test_yaml12.py",  # pyyaml: the YAML 1.2 loader built on its (C) SafeLoader
    "tests/config/test_experiment_loading.py",
    "tests/cli/test_config_cmd.py",  # `primus config validate` and `show`: all of the above, end to end
    "tests/tracking/test_perf.py",  # psutil: host memory and utilisation
    "tests/tracking/test_hub.py",  # the tracking core
]
# Which modules and versions the child imports: each dependency's top-level modules, where they come from.
PROBE = """
import importlib, importlib.metadata as md, json, sys
from packaging.utils import canonicalize_name
modules = md.packages_distributions()
found = {}
for name in sys.argv[1:]:
    tops = [m for m, dists in modules.items() if m.isidentifier() and name in map(canonicalize_name, dists)]
    found[name] = [md.version(name), [importlib.import_module(m).__file__ for m in tops]]
print(json.dumps(found))
"""


def floors() -> dict[str, str]:
    listed = subprocess.run([SCRIPT, "--list"], capture_output=True, text=True, check=True).stdout
    return dict(line.split("==") for line in listed.split())


def run_on_floors(*command: str, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(FOLDER), "OMP_NUM_THREADS": "1"}
    try:
        return subprocess.run(
            [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(
            f"still running after {timeout} s:\n{_text(e.stdout)[-6000:]}{_text(e.stderr)[-3000:]}"
        ) from e


def _text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def test_the_core_runs_on_the_lowest_release_of_each_dependency_setup_cfg_allows():
    wanted = floors()
    installed = (FOLDER / ".installed").read_text().split() if (FOLDER / ".installed").exists() else None
    assert installed == [f"{n}=={v}" for n, v in wanted.items()], (
        f"{FOLDER} holds {installed}, setup.cfg asks for {wanted}: `make setup` (scripts/setup-dependency-floors.sh)"
    )

    probe = run_on_floors("-c", PROBE, *wanted, timeout=60)
    assert probe.returncode == 0, probe.stderr[-3000:]
    for name, (version, files) in json.loads(probe.stdout).items():
        assert Version(version) == Version(wanted[name]), name  # the floor, not the lab's pinned release
        assert files and all(Path(f).is_relative_to(FOLDER) for f in files), (name, files)

    done = run_on_floors("-m", "pytest", "-q", "-m", "not slow", *CORE_TESTS, timeout=240)
    assert done.returncode == 0, f"the core's tests on {wanted}:\n{done.stdout[-6000:]}{done.stderr[-3000:]}"


TRACKER_FOLDER = ROOT / ".venv" / "tracker-floors"
# Our W&B sink end to end on the floor, offline: every step once, a restart resuming the same run, an alert, each
# read back from the run files (with the floor's own record reader)
WANDB_SINK_TESTS = [
    "tests/tracking/test_sinks_end_to_end.py::test_all_sinks_receive_every_step_exactly_once",
    "tests/tracking/test_sinks_end_to_end.py::test_same_run_dir_resumes_the_same_runs_without_duplicates",
    "tests/tracking/test_sinks_end_to_end.py::test_an_alert_reaches_every_tracker_its_own_way",
    "tests/tracking/test_wandb_unreachable.py",  # an unreachable server: bounded, then offline, nothing lost
]


@pytest.mark.slow  # a real W&B service and MLflow server in a child pytest: ~2.5 min on 2 cores
def test_our_wandb_sink_runs_on_the_lowest_wandb_setup_cfg_allows():
    """The wandb extra's floor is Megatron-Bridge's pin (0.29.0), so primus-tracking[wandb] installs beside it."""
    [wanted] = subprocess.run([SCRIPT, "--list-trackers"], capture_output=True, text=True, check=True).stdout.split()
    installed = (
        (TRACKER_FOLDER / ".installed").read_text().split() if (TRACKER_FOLDER / ".installed").exists() else None
    )
    assert installed == [wanted], (
        f"{TRACKER_FOLDER} holds {installed}, setup.cfg asks for {wanted}: `make setup` (scripts/setup-dependency-floors.sh)"
    )
    name, floor = wanted.split("==")
    env = {**os.environ, "PYTHONPATH": str(TRACKER_FOLDER), "OMP_NUM_THREADS": "1"}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, name], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    [(version, files)] = json.loads(probe.stdout).values()
    assert Version(version) == Version(floor) and files and all(Path(f).is_relative_to(TRACKER_FOLDER) for f in files)

    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *WANDB_SINK_TESTS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"still running after 400 s:\n{_text(e.stdout)[-6000:]}") from e
    assert done.returncode == 0, f"our W&B sink on wandb {floor}:\n{done.stdout[-6000:]}{done.stderr[-3000:]}"
