"""The ``megatron_run`` fixture: tiny real Megatron trainings (megatron_runs.py), each in its own directory."""

from __future__ import annotations

import pytest
from megatron_runs import MegatronRun, launch


@pytest.fixture(scope="session")
def megatron_run(tmp_path_factory):
    """``megatron_run(name, *args, nproc=1, env=None) -> MegatronRun``, each in its own directory."""

    def run(name: str, *args: str, nproc: int = 1, env: dict[str, str] | None = None) -> MegatronRun:
        return launch(tmp_path_factory.mktemp(name) / "run.log", *args, nproc=nproc, env=env)

    return run
