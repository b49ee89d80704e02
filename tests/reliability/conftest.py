"""Fixtures of the reliability suite: the backend a scenario runs on (each scenario runs on Megatron and
on TorchTitan), where TorchTitan's tiny tokenizer and dataset are built, and the runs' MLflow client."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_runs import MEGATRON, TORCHTITAN, Backend


@pytest.fixture(scope="module", params=[MEGATRON, TORCHTITAN], ids=lambda b: b.name)
def backend(request) -> Backend:
    return request.param


@pytest.fixture(scope="session")
def titan_assets_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("reliability-titan-assets")


@pytest.fixture(scope="session")
def session_client(mlflow_server):
    from mlflow import MlflowClient

    return MlflowClient(mlflow_server.uri)
