"""An experiment with a launch: block, a launching environment with secrets planted in it, and a helper
that turns them into a plan the way `primus train` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from launch_planted import ALLOWED_SECRETS, EXCLUDED_SECRETS, PLAIN, UNLISTED_SECRETS

from primus.config import load_experiment
from primus.launch.dispatch import plan_launch
from primus.launch.job import select_module
from primus.launch.settings import resolve_settings

EXPERIMENT = """\
exp_name: llama_test
workspace: {workspace}
launch:
  launcher: slurm
  nnodes: 2
  slurm: {{partition: mi300x, time: "02:00:00", gpus_per_node: 8}}
  container: {{mounts: ["{data}:/data:ro"]}}
  passthrough: {{names: [MY_TEAM_SETTING], exclude: [HF_TOKEN]}}
modules:
  pre_trainer:
    framework: megatron
    config: pre_trainer.yaml
    model: tiny_gpt.yaml
    overrides: {{mock_data: true, train_iters: 3, disable_wandb: false, wandb_project: launch-tests}}
"""


@pytest.fixture
def experiment(tmp_path) -> Path:
    (tmp_path / "data").mkdir()
    path = tmp_path / "exp" / "llama_test.yaml"
    path.parent.mkdir()
    path.write_text(EXPERIMENT.format(workspace=tmp_path / "ws", data=tmp_path / "data"))
    return path


@pytest.fixture
def environ(tmp_path, monkeypatch) -> dict[str, str]:
    """The launching environment: a shell's basics and the planted variables, nothing else, so the
    expected allow-list is exact. The planted values go into os.environ too: redaction hides the
    values of the secret-named variables it finds there."""
    planted = {**ALLOWED_SECRETS, **EXCLUDED_SECRETS, **UNLISTED_SECRETS, **PLAIN}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8", **planted}


@pytest.fixture
def make_plan(tmp_path):
    def make(experiment: Path, environ: dict[str, str], flags: dict | None = None, overrides=(),
             python: str = "/opt/venv/bin/python"):
        exp = load_experiment(experiment, overrides, environ=environ)
        settings = resolve_settings(exp.launch, flags or {}, environ)
        return plan_launch(exp, select_module(exp, None), overrides, settings, environ=environ, python=python,
                           cwd=tmp_path)
    return make
