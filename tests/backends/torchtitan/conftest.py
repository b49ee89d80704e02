"""Launch tiny real TorchTitan trainings (upstream's llama3 debug model, CPU config) through Primus:
``python -m primus.backends.torchtitan`` (what `primus train` runs) or ``primus-run torchrun -m
torchtitan.train`` (the user's own upstream command), 1 or 2 processes, output captured to a file."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from titan_runs import CPU_CONFIG, STEPS, TitanRun

from primus.backends.torchtitan.assets import ASSETS_ENV

# Rendezvous and patch selection are the test's to choose, never inherited.
_NOT_INHERITED = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                  "PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES", "PRIMUS_PLATFORM", "PRIMUS_ACTIVATE", "PRIMUS_CONFIG",
                  "PRIMUS_CONFIG_OVERRIDES", "PRIMUS_RUN_DIR")


@pytest.fixture(scope="session")
def titan_assets(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("titan-assets")


@pytest.fixture(scope="session")
def titan_run(tmp_path_factory, titan_assets):
    """``titan_run(name, *args, nproc=1, launcher="primus", env=None, timeout=240) -> TitanRun``, each in
    its own directory.
    launcher "primus": python -m primus.backends.torchtitan; "primus-run": primus-run torchrun -m
    torchtitan.train (activation through the bootstrap); "upstream": torchrun -m torchtitan.train."""

    def run(name: str, *args: str, nproc: int = 1, launcher: str = "primus", env: dict[str, str] | None = None,
            timeout: float = 240) -> TitanRun:
        tmp_path = tmp_path_factory.mktemp(name)
        dump = tmp_path / "dump"
        run_env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        run_env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", HF_DATASETS_OFFLINE="1",
                       HF_HUB_OFFLINE="1", **{ASSETS_ENV: str(titan_assets)}, **(env or {}))
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                    "--local-ranks-filter", "0"]
        command = {
            "primus": [sys.executable, "-m", "primus.backends.torchtitan"] if nproc == 1
            else [*torchrun, "-m", "primus.backends.torchtitan"],
            "primus-run": [shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run")),
                           *torchrun, "-m", "torchtitan.train"],
            "upstream": [*torchrun, "-m", "torchtitan.train"],
        }[launcher]
        log_path = tmp_path / "run.log"
        started = time.monotonic()
        with open(log_path, "w") as log:
            process = subprocess.Popen([*command, *CPU_CONFIG, "--training.steps", str(STEPS), "--dump-folder",
                                        str(dump), *args], cwd=tmp_path, env=run_env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                pytest.fail(f"TorchTitan run timed out after {timeout} s: "
                            f"{TitanRun(-9, dump, log_path, timeout).explain()}")
        return TitanRun(code, dump, log_path, time.monotonic() - started)

    return run
