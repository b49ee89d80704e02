"""A new backend is its folder plus one entry point: a distribution adding a toy trainer as a backend (group
primus.backends, tests/support/plugin_dists.py) is listed with its upstream and patch, validates its experiments by
its own schema, and `primus train` launches its entry module with its patch applied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.plugin_dists import install_backend_plugin


@pytest.fixture
def toy(tmp_path) -> tuple[Path, dict[str, str]]:
    site = install_backend_plugin(tmp_path / "site")
    (tmp_path / "toy.yaml").write_text("steps: 5\n")
    return tmp_path, {**os.environ, "PYTHONPATH": str(site)}


def _experiment(folder: Path, overrides: str) -> Path:
    path = folder / "exp.yaml"
    path.write_text(f"workspace: {folder / 'ws'}\nmodules:\n  pre_trainer:\n    framework: toy\n    config: toy.yaml\n"
                    f"    overrides: {{{overrides}}}\n")
    return path


def _primus(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "primus.cli.main", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_its_upstream_and_patch_are_listed_and_apply(toy):
    folder, env = toy
    done = _primus(env, folder, "patches")
    assert done.returncode == 0, done.stderr
    assert "Toy        toytrainer 1.2.0 (wheel" in done.stdout
    assert "1 of 1 patches apply here" in done.stdout
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("toy.log")] == [["toy.log", "toy"]]


def test_primus_train_runs_its_entry_module_with_its_patch_applied(toy):
    folder, env = toy
    done = _primus(env, folder, "train", "--config", str(_experiment(folder, "steps: 2")))
    assert done.returncode == 0, done.stderr
    assert "-m primus_toy_backend" in done.stdout
    tracked = [line for line in done.stdout.splitlines() if line.startswith("[toy] tracked step")]
    assert tracked == ["[toy] tracked step 1: {'toy/loss': 1.0}", "[toy] tracked step 2: {'toy/loss': 0.5}"]


def test_its_schema_refuses_a_key_it_does_not_have(toy):
    folder, env = toy
    done = _primus(env, folder, "train", "--config", str(_experiment(folder, "stepz: 2")), "--dry-run")
    assert done.returncode != 0
    assert "stepz" in done.stderr and "steps" in done.stderr
