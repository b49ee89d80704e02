"""Launch tiny real TorchTitan trainings (upstream's llama3 debug model, CPU-sized) through Primus:
``python -m primus.backends.torchtitan`` (what `primus train` runs) or ``primus-run torchrun -m
torchtitan.train`` (the user's own upstream command), 1 or 2 processes, output captured to a file; on
the installed release (0.3) or an alternate one (titan_runs.RELEASES)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
from support.launch import other_ranks_to_files, start, wait_or_kill
from support.two_nodes import run_two_nodes
from titan_runs import RANK_LOGS, STEPS, V0_3, Release, TitanRun

from primus.backends.torchtitan.assets import ASSETS_ENV, VERSION, ensure_tiny_assets


@pytest.fixture(scope="session")
def titan_assets(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("titan-assets")


@pytest.fixture(scope="session")
def titan_run(tmp_path_factory, titan_assets):
    """``titan_run(name, *args, release=V0_3, model_from_experiment=False, nproc=1, launcher="primus", env=None,
    timeout=240) -> TitanRun``, each in its own directory.
    launcher "primus": python -m primus.backends.torchtitan; "primus-run": primus-run torchrun -m
    torchtitan.train (activation through the bootstrap); "upstream": torchrun -m torchtitan.train.
    ``model_from_experiment``: the command line does not name the model's config; the experiment does.
    ``nodes=2``: two simulated nodes of ``nproc`` ranks each (support/two_nodes.py); node 0's output is the run's."""

    def run(name: str, *args: str, release: Release = V0_3, model_from_experiment: bool = False, nproc: int = 1,
            launcher: str = "primus", env: dict[str, str] | None = None, timeout: float = 240,
            nodes: int = 1) -> TitanRun:
        tmp_path = tmp_path_factory.mktemp(name)
        dump = tmp_path / "dump"
        run_env = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", ASSETS_ENV: str(titan_assets), **release.env(),
                   **(env or {})}

        def command(launch: list[str]) -> list[str]:
            torchrun = [sys.executable, "-m", "torch.distributed.run", *launch, "--local-ranks-filter", "0",
                        *other_ranks_to_files(nproc, tmp_path / RANK_LOGS)]
            return {
                "primus": [sys.executable, "-m", "primus.backends.torchtitan"] if nproc == 1
                else [*torchrun, "-m", "primus.backends.torchtitan"],
                "primus-run": [shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run")),
                               *torchrun, "-m", "torchtitan.train"],
                "upstream": [*torchrun, "-m", "torchtitan.train"],
            }[launcher] + upstream_args

        log_path = tmp_path / "run.log"
        started = time.monotonic()
        upstream_args = [*(() if model_from_experiment else release.model_args),
                         *release.cpu_args(ensure_tiny_assets(titan_assets / VERSION)),  # the subprocesses' cache
                         "--training.steps", str(STEPS), release.dump_flag, str(dump), *args]
        if nodes == 1:
            code = wait_or_kill(start(command(["--standalone", f"--nproc_per_node={nproc}"]), tmp_path, log_path,
                                      run_env), timeout)
        else:
            logs = [log_path, tmp_path / "node1.log"]
            code = run_two_nodes(command, tmp_path, logs, run_env, timeout)
        if code is None:
            run = TitanRun(None, log_path, timeout, dump=dump)
            pytest.fail(f"TorchTitan run timed out after {timeout} s: {run.explain()}")
        return TitanRun(code, log_path, time.monotonic() - started, dump=dump)

    return run
