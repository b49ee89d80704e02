"""Start tiny real MaxText trainings (the tiny CPU experiment, synthetic data) on the MaxText environment's
interpreter, each in its own folder with its output captured: through `primus train`, through the user's
upstream command under ``primus-run``, or upstream alone. Several start at once (``start``), since most of
a run is imports and XLA compilation on one core.

Every run imports this checkout's ``primus``: .venv-maxtext may hold another checkout's (an editable install,
whose finder Python consults after PYTHONPATH), so the runs get a folder holding only this ``primus`` first on
PYTHONPATH (the repository root itself would shadow modules by its other folders' names)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from maxtext_runs import MAXTEXT_ENV, REPO, MaxTextRun
from support.launch import start as start_process
from support.launch import wait_or_kill

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
def this_primus(tmp_path_factory) -> Path:
    """A folder holding only this checkout's ``primus`` package (a link)."""
    folder = tmp_path_factory.mktemp("this-primus")
    (folder / "primus").symlink_to(REPO / "primus", target_is_directory=True)
    return folder


@pytest.fixture(scope="session")
def start(tmp_path_factory, this_primus) -> Callable[..., Callable[[], MaxTextRun]]:
    """``start(name, command, env=None) -> wait``: starts ``command`` in a fresh folder (its cwd, also
    WANDB_DIR=<folder>/wandb with W&B offline) and returns a function that waits for it."""

    def launch(name: str, command: list[str], env: dict[str, str] | None = None) -> Callable[[], MaxTextRun]:
        workdir = tmp_path_factory.mktemp(name)
        (workdir / "wandb").mkdir()
        started = time.monotonic()
        env = dict(env or {})
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(this_primus), env.get("PYTHONPATH")) if p)
        process = start_process(command, workdir, workdir / "run.log", {
            **MAXTEXT_ENV, "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"), **env})

        def wait() -> MaxTextRun:
            code = wait_or_kill(process, max(1.0, TIMEOUT_S - (time.monotonic() - started)))
            return MaxTextRun(-9 if code is None else code, workdir, time.monotonic() - started)

        return wait

    return launch
