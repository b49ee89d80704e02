"""Megatron-Bridge lives in its own environment (.venv-bridge, an overlay of .venv built by
scripts/setup-bridge-venv.sh as part of the set-up): its trainings run in subprocesses on that interpreter, and
this process (the main .venv) reads back what the trackers received. The trainings several test files read are
session fixtures here (bridge_runs.py says what each does)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bridge_runs, beside the tests

from bridge_runs import BridgeRun, train_resumed, train_tracked  # noqa: E402
from support.this_primus import this_primus_folder  # noqa: E402


@pytest.fixture(scope="session")
def bridge_primus(tmp_path_factory) -> Path:
    return this_primus_folder(tmp_path_factory.mktemp("primus"))


@pytest.fixture(scope="session")
def tracked(tmp_path_factory, mlflow_server, bridge_primus) -> BridgeRun:
    return train_tracked(tmp_path_factory.mktemp("bridge-tracked"), bridge_primus, mlflow_server.uri)


@pytest.fixture(scope="session")
def resumed(tmp_path_factory, mlflow_server, bridge_primus, tracked) -> BridgeRun:
    return train_resumed(tmp_path_factory.mktemp("bridge-resumed"), bridge_primus, mlflow_server.uri,
                         tracked.workdir / "ckpt")
