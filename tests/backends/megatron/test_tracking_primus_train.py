"""`primus train --config configs/megatron/tiny_cpu.yaml train_iters=3` end to end, in one process and
under torchrun with two (TP=2): the experiment YAML turns TensorBoard and MLflow on (that toggle
combination of test_tracking_toggles.py), its name names the MLflow experiment, and the launcher says
where the results are. Each sink is read back as for the other combinations."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from megatron_tracking_runs import (
    AVG_STEPS,
    MLFLOW,
    STRAGGLER_STEPS,
    STRAGGLERS,
    PERF,
    PERF_AVG,
    TB,
    UPSTREAM,
    RunSpec,
    assert_sinks,
    at,
    progress_at,
    with_goodput,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
PRIMUS = str(Path(sys.executable).with_name("primus"))


@dataclass(frozen=True)
class TrainRun:
    returncode: int
    log_path: Path

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def primus_train(workdir: Path, experiment: str, mlflow_uri: str, *argv: str) -> TrainRun:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PRIMUS_EXP_NAME=experiment,
               MLFLOW_TRACKING_URI=mlflow_uri)
    log_path = workdir / "run.log"
    with open(log_path, "w") as log:
        code = subprocess.run([PRIMUS, "train", "--config", str(REPO / "configs/megatron/tiny_cpu.yaml"), *argv,
                               "train_iters=3", f"workspace={workdir}"], cwd=workdir, env=env, stdout=log,
                              stderr=subprocess.STDOUT, timeout=300).returncode
    return TrainRun(code, log_path)


def expectation(experiment: str, nproc: int) -> RunSpec:
    """Two ranks: stragglers on by default."""
    stragglers = at(STRAGGLER_STEPS, *STRAGGLERS) if nproc > 1 else {}
    return RunSpec(frozenset({TB, MLFLOW}), experiment, with_goodput(at([1, 2, 3], *UPSTREAM) | at([2, 3], *PERF)
                   | at(AVG_STEPS, *PERF_AVG) | progress_at([1, 2, 3]) | stragglers))


@pytest.mark.parametrize("nproc", [1, 2])
def test_primus_train_tracks_to_tensorboard_and_mlflow(tmp_path, mlflow_server, mlflow_client, nproc):
    experiment = f"h6-primus-train-{nproc}"
    extra = ["--nproc-per-node", "2", "tensor_model_parallel_size=2"] if nproc == 2 else []
    run = primus_train(tmp_path, experiment, mlflow_server.uri, *extra)
    assert run.returncode == 0, run.output[-5000:]
    assert f"[primus] results of {tmp_path / experiment}" in run.output
    assert_sinks(run, expectation(experiment, nproc), mlflow_client)
