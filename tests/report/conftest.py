"""The real tiny Megatron run the report tests share (one per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_support import train_tiny_megatron


@pytest.fixture(scope="session")
def megatron_run_dir(tmp_path_factory) -> Path:
    return train_tiny_megatron(tmp_path_factory.mktemp("report-megatron"))
