"""`primus train` runs MaxText on its own environment's interpreter (the one place: launch.job.interpreter),
the other frameworks on the interpreter running primus; a MaxText experiment that names its run folder
keeps it as the run directory, so a restart resumes the same tracker runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from maxtext_runs import REPO, TINY_CPU

from primus.config import load_experiment
from primus.launch.job import interpreter, run_directory


def test_the_variable_wins_then_the_environment_beside_this_one(tmp_path, monkeypatch):
    assert interpreter("torchtitan", "/usr/bin/python3", {"PRIMUS_MAXTEXT_PYTHON": "/x"}) == "/usr/bin/python3"
    assert interpreter("maxtext", "/usr/bin/python3", {"PRIMUS_MAXTEXT_PYTHON": "/opt/mx/bin/python"}) == \
        "/opt/mx/bin/python"
    beside = tmp_path / ".venv-maxtext" / "bin" / "python"
    beside.parent.mkdir(parents=True)
    beside.touch()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    assert interpreter("maxtext", "/usr/bin/python3", {}) == str(beside)


@pytest.mark.parametrize("framework, package, venv", [("maxtext", "maxtext", ".venv-maxtext"),
                                                      ("megatron_bridge", "megatron/bridge", ".venv-bridge")])
def test_a_checkout_on_the_path_of_this_environment_still_runs_on_its_own(tmp_path, monkeypatch, framework, package,
                                                                          venv):
    """maxtext (or megatron.bridge: `make canary`'s install) importable here from a folder on PYTHONPATH, but JAX
    (Bridge's transformers) is not: the framework's own environment runs it."""
    (tmp_path / "checkout" / package).mkdir(parents=True)
    (tmp_path / "checkout" / package / "__init__.py").touch()
    monkeypatch.syspath_prepend(str(tmp_path / "checkout"))
    beside = tmp_path / venv / "bin" / "python"
    beside.parent.mkdir(parents=True)
    beside.touch()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    assert interpreter(framework, "/usr/bin/python3", {}) == str(beside)


def test_no_environment_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    with pytest.raises(ValueError, match=r"create it with `scripts/setup-maxtext-venv.sh .*\.venv-maxtext`, or set "
                                         r"PRIMUS_MAXTEXT_PYTHON to a Python that has maxtext, jax and primus installed"):
        interpreter("maxtext", "/usr/bin/python3", {})


def test_primus_train_launches_maxtext_on_its_environment(tmp_path):
    out = subprocess.run([sys.executable, "-m", "primus.cli.main", "train", "--config", str(TINY_CPU), "--dry-run"],
                         capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    command = out.stdout.splitlines()[1]
    expected = Path(sys.prefix).parent / ".venv-maxtext" / "bin" / "python"
    assert command.endswith(f"{expected} -m primus.backends.maxtext"), command
    assert "modules.pre_trainer.overrides.mlflow_experiment_name=maxtext_tiny_cpu" in command
    assert expected.parent.parent == REPO / ".venv-maxtext"


def test_a_named_maxtext_run_folder_is_the_run_directory(tmp_path):
    named = load_experiment(TINY_CPU, [f"base_output_directory={tmp_path}", "run_name=r1"])
    assert run_directory(named, named.modules["pre_trainer"]) == tmp_path / "r1"  # where its checkpoints live
    unnamed = load_experiment(TINY_CPU)
    assert run_directory(unnamed, unnamed.modules["pre_trainer"], now=0).parent == unnamed.workspace / unnamed.name
