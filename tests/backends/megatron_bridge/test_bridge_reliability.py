"""Megatron-Bridge stopped by SIGTERM mid-run (the scheduler's preemption): the MLflow run ends KILLED and every step
the training logged before it stopped is in every tracker exactly once — MLflow (the session's server), TensorBoard
and W&B (offline) against the run's journal. One real training (tiny_pretrain.py under ``primus-run`` and torchrun,
which forwards the signal to its worker) serves every check."""

from __future__ import annotations

import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.journal_files import journal_lines, run_dirs_under
from support.launch import FinishedRun, kill_torchrun, start, wait_or_kill
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history
from support.this_primus import this_primus_folder, with_this_primus
from test_bridge_tracking_end_to_end import BRIDGE_PYTHON, SCRIPT, TIMEOUT_S

pytestmark = pytest.mark.slow

EXPERIMENT, LOSS = "bridge-sigterm", "lm loss"
ITERATIONS = 2000  # far more than it trains before the signal: it is stopped, it does not finish
SIGNAL_AFTER = 3  # logged steps in the journal before the signal
EXIT_S = 120.0  # the exit handlers' deadline (30 s) and torchrun's own shutdown, with room for a loaded host


@dataclass(frozen=True)
class Stopped:
    finished: FinishedRun
    workdir: Path

    def run_dir(self) -> Path:
        [run_dir] = run_dirs_under(self.workdir / "primus")
        return run_dir

    def journaled(self) -> list[int]:
        """The steps the training logged (its journal, written before any tracker is sent anything)."""
        return [r["s"] for r in journal_lines(self.run_dir()) if r["k"] == "m" and LOSS in r["d"]]


def _logged(workdir: Path) -> int:
    try:
        [run_dir] = run_dirs_under(workdir / "primus")
        return sum(1 for r in journal_lines(run_dir, skip_torn=True) if r["k"] == "m" and LOSS in r["d"])
    except ValueError:  # no run directory yet
        return 0


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, mlflow_server) -> Stopped:
    workdir = tmp_path_factory.mktemp("bridge-sigterm")
    primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
    command = [primus_run, str(BRIDGE_PYTHON), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
               "1", str(SCRIPT)]
    env = {"TINY_ITERATIONS": str(ITERATIONS), "TINY_EVAL_INTERVAL": str(ITERATIONS),
           "TINY_TENSORBOARD_DIR": str(workdir / "tb"), "TINY_MLFLOW_EXPERIMENT": EXPERIMENT,
           "TINY_MLFLOW_RUN_NAME": "stopped", "TINY_MLFLOW_TRACKING_URI": mlflow_server.uri,
           "TINY_WANDB_PROJECT": EXPERIMENT, "TINY_WANDB_EXP_NAME": "stopped",
           "TINY_WANDB_SAVE_DIR": str(workdir / "wandb"), "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"),
           "PRIMUS_OUTPUT_ROOT": str(workdir / "primus"), "PYTHONWARNINGS": "ignore"}
    started = time.monotonic()
    process = start(command, workdir, workdir / "run.log",
                    with_this_primus(this_primus_folder(tmp_path_factory.mktemp("primus")), env))
    try:
        deadline = started + TIMEOUT_S
        while _logged(workdir) < SIGNAL_AFTER:
            if process.poll() is not None or time.monotonic() > deadline:
                code = wait_or_kill(process, 1)
                raise AssertionError(f"never logged {SIGNAL_AFTER} steps: "
                                     f"{FinishedRun(code, workdir / 'run.log', time.monotonic() - started).explain()}")
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)  # primus-run became the launcher (exec): torchrun forwards it
        code = wait_or_kill(process, EXIT_S)
    finally:
        kill_torchrun(process)
    return Stopped(FinishedRun(code, workdir / "run.log", time.monotonic() - started), workdir)


def test_sigterm_ends_the_mlflow_run_killed_with_every_logged_step_once(stopped, mlflow_client):
    finished = stopped.finished
    assert finished.returncode not in (0, None), finished.explain()  # stopped, within the deadline
    steps = stopped.journaled()
    assert SIGNAL_AFTER <= len(steps) < ITERATIONS and steps == list(range(1, len(steps) + 1)), finished.explain()
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert run.info.status == "KILLED", finished.explain()
    assert [step for step, _ in mlflow_history(mlflow_client, run.info.run_id, LOSS)] == steps


def test_tensorboard_and_wandb_hold_every_logged_step_once(stopped):
    steps = stopped.journaled()
    assert [step for step, _ in read_tb_scalars(stopped.workdir / "tb")[LOSS]] == steps
    assert [row["_step"] for row in read_wandb_history(stopped.workdir / "wandb") if LOSS in row] == steps
