"""The ``megatron_run`` fixture: tiny real Megatron trainings (megatron_runs.py), each in its own directory; and the
checkpoint-then-resume pair of runs two test modules read (``stopped_then_resumed``)."""

from __future__ import annotations

import pytest
from megatron_runs import MegatronRun, launch
from megatron_tracking_runs import RESUME_ARGS


@pytest.fixture(scope="session")
def megatron_run(tmp_path_factory):
    """``megatron_run(name, *args, nproc=1, env=None) -> MegatronRun``, each in its own directory."""

    def run(name: str, *args: str, nproc: int = 1, env: dict[str, str] | None = None) -> MegatronRun:
        return launch(tmp_path_factory.mktemp(name) / "run.log", *args, nproc=nproc, env=env)

    return run


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    return tmp_path_factory.mktemp("resume-ckpt")


@pytest.fixture(scope="session")
def stopped_then_resumed(megatron_run, mlflow_server, checkpoint):
    """A job that saves at iteration 2 and stops (--exit-interval), then one that resumes from it (--load)."""
    args = (*RESUME_ARGS, "--save", str(checkpoint))
    env = {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": mlflow_server.uri}
    first = megatron_run("resume-first", *args, "--exit-interval", "2", env=env)
    assert first.returncode == 0, first.explain()
    second = megatron_run("resume-second", *args, "--load", str(checkpoint), env=env)
    assert second.returncode == 0, second.explain()
    return first, second
