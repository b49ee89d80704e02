"""Start tiny real MaxText trainings (the tiny CPU experiment, synthetic data) on the MaxText environment's
interpreter, each in its own folder with its output captured: through `primus train`, through the user's
upstream command under ``primus-run``, or upstream alone. Several start at once (``start``), since most of
a run is imports and XLA compilation on one core.
Every run imports this checkout's ``primus`` (support/this_primus.py), not the one .venv-maxtext was installed
with."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from maxtext_runs import MAXTEXT_ENV, MaxTextRun
from support.launch import start as start_process
from support.launch import wait_or_kill
from support.this_primus import this_primus_folder, with_this_primus

from primus.launch.job import interpreter

TIMEOUT_S = 400.0


@pytest.fixture(scope="session")
def maxtext_python() -> str:
    """The MaxText environment's interpreter, as `primus train` picks it (.venv-maxtext, built by
    scripts/setup-maxtext-venv.sh as part of the set-up)."""
    return interpreter("maxtext")


@pytest.fixture(scope="session")
def primus_run_command() -> list[str]:
    return [shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))]


@pytest.fixture(scope="session")
def start(tmp_path_factory) -> Callable[..., Callable[[], MaxTextRun]]:
    """``start(name, command, env=None) -> wait``: starts ``command`` in a fresh folder (its cwd, also
    WANDB_DIR=<folder>/wandb with W&B offline) and returns a function that waits for it."""

    this_primus = this_primus_folder(tmp_path_factory.mktemp("primus"))

    def launch(name: str, command: list[str], env: dict[str, str] | None = None) -> Callable[[], MaxTextRun]:
        workdir = tmp_path_factory.mktemp(name)
        (workdir / "wandb").mkdir()
        started = time.monotonic()
        process = start_process(command, workdir, workdir / "run.log", with_this_primus(this_primus, {
            **MAXTEXT_ENV, "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"), **(env or {})}))

        def wait() -> MaxTextRun:
            code = wait_or_kill(process, max(1.0, TIMEOUT_S - (time.monotonic() - started)))
            return MaxTextRun(-9 if code is None else code, workdir, time.monotonic() - started)

        return wait

    return launch
