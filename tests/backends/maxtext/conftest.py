"""Start tiny real MaxText trainings (the tiny CPU experiment, synthetic data) on the MaxText environment's
interpreter, each in its own folder with its output captured: through `primus train`, through the user's
upstream command under ``primus-run``, or upstream alone. Several start at once (``start``), since most of
a run is imports and XLA compilation on one core."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from maxtext_runs import MaxTextRun

from primus.launch.job import interpreter

# Patch activation, the experiment and the trackers' settings are the test's to choose, never inherited.
_NOT_INHERITED = ("PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES", "PRIMUS_ACTIVATE", "PRIMUS_CONFIG",
                  "PRIMUS_CONFIG_OVERRIDES", "PRIMUS_RUN_DIR", "PRIMUS_WORKSPACE", "PYTHONPATH", "JAX_PLATFORMS")
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

    def launch(name: str, command: list[str], env: dict[str, str] | None = None) -> Callable[[], MaxTextRun]:
        workdir = tmp_path_factory.mktemp(name)
        run_env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        run_env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu",
                       WANDB_MODE="offline", WANDB_DIR=str(workdir / "wandb"), **(env or {}))
        (workdir / "wandb").mkdir()
        log = open(workdir / "run.log", "w")
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=workdir, env=run_env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)

        def wait() -> MaxTextRun:
            try:
                code = process.wait(timeout=max(1.0, TIMEOUT_S - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            finally:
                log.close()
            return MaxTextRun(code, workdir, time.monotonic() - started)

        return wait

    return launch
