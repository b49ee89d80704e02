"""Megatron-Bridge through a dead MLflow server and then SIGTERM (the scheduler's preemption), in one real training
(tiny_pretrain.py under ``primus-run`` and torchrun, which forwards the signal to its worker): the server is killed
once the run receives steps, the training goes on, the server comes back and gets the steps it missed, then the
signal stops the training. The MLflow run ends KILLED, and every step the training logged (its journal) is in
every tracker exactly once — MLflow, TensorBoard and W&B (offline). The server is the session's fault server, as
in tests/reliability."""

from __future__ import annotations

import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.journal_files import journal_lines, run_dirs_under
from support.launch import FinishedRun, kill_torchrun, start, torchrun_workers, wait_or_kill
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history
from support.this_primus import this_primus_folder, with_this_primus
from test_bridge_tracking_end_to_end import BRIDGE_PYTHON, SCRIPT, TIMEOUT_S

pytestmark = pytest.mark.slow

EXPERIMENT, LOSS = "bridge-sigterm", "lm loss"
ITERATIONS = 2000  # far more than it trains before the signal: it is stopped, it does not finish
KILL_AFTER = 3  # steps in MLflow before the server is killed
TRAINED_WHILE_DOWN = 5  # steps the journal gains with no server at all
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


def _in_mlflow(client) -> int:
    from mlflow.exceptions import MlflowException

    try:
        [run] = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
        return len(mlflow_history(client, run.info.run_id, LOSS))
    except (AttributeError, ValueError, MlflowException):  # no experiment or run yet
        return 0


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, _fault_server) -> Stopped:
    from mlflow import MlflowClient

    server, client = _fault_server, MlflowClient(_fault_server.uri)
    workdir = tmp_path_factory.mktemp("bridge-faults")
    primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
    command = [primus_run, str(BRIDGE_PYTHON), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
               "1", str(SCRIPT)]
    env = {"TINY_ITERATIONS": str(ITERATIONS), "TINY_EVAL_INTERVAL": str(ITERATIONS),
           "TINY_TENSORBOARD_DIR": str(workdir / "tb"), "TINY_MLFLOW_EXPERIMENT": EXPERIMENT,
           "TINY_MLFLOW_RUN_NAME": "stopped", "TINY_MLFLOW_TRACKING_URI": server.uri,
           "TINY_WANDB_PROJECT": EXPERIMENT, "TINY_WANDB_EXP_NAME": "stopped",
           "TINY_WANDB_SAVE_DIR": str(workdir / "wandb"), "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"),
           "PRIMUS_OUTPUT_ROOT": str(workdir / "primus"), "PYTHONWARNINGS": "ignore"}
    started = time.monotonic()
    process = start(command, workdir, workdir / "run.log",
                    with_this_primus(this_primus_folder(tmp_path_factory.mktemp("primus")), env))

    def until(predicate, what: str) -> None:
        while not predicate():
            if process.poll() is not None or time.monotonic() > started + TIMEOUT_S:
                code = wait_or_kill(process, 1)
                explained = FinishedRun(code, workdir / "run.log", time.monotonic() - started).explain()
                raise AssertionError(f"{what} never happened: {explained}")
            time.sleep(0.05)

    try:
        until(lambda: _in_mlflow(client) >= KILL_AFTER, f"MLflow receiving {KILL_AFTER} steps")
        server.kill()
        down_at = _logged(workdir)
        until(lambda: _logged(workdir) >= down_at + TRAINED_WHILE_DOWN, "training on with the server down")
        # the training waits (its worker stopped; the delivery process, a process of its own, goes on) while the
        # server comes back and gets every step it missed, so it cannot finish before the signal
        [worker] = torchrun_workers(process.pid).values()
        worker.suspend()
        server.restart()
        until(lambda: _in_mlflow(client) >= _logged(workdir), "MLflow receiving the steps it missed")
        worker.resume()
        process.send_signal(signal.SIGTERM)  # primus-run became the launcher (exec): torchrun forwards it
        code = wait_or_kill(process, EXIT_S)
    finally:
        kill_torchrun(process)
        if not (server.running() and server.healthy()):
            server.restart()
    return Stopped(FinishedRun(code, workdir / "run.log", time.monotonic() - started), workdir)


def test_a_dead_server_loses_nothing_and_sigterm_ends_the_run_killed(stopped, _fault_server):
    from mlflow import MlflowClient

    client, finished = MlflowClient(_fault_server.uri), stopped.finished
    assert finished.returncode not in (0, None), finished.explain()  # stopped, within the deadline
    steps = stopped.journaled()
    assert KILL_AFTER + TRAINED_WHILE_DOWN <= len(steps) < ITERATIONS, finished.explain()
    assert steps == list(range(1, len(steps) + 1)), finished.explain()
    [run] = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert run.info.status == "KILLED", finished.explain()
    # the steps trained while the server was dead included, none twice
    assert [step for step, _ in mlflow_history(client, run.info.run_id, LOSS)] == steps


def test_tensorboard_and_wandb_hold_every_logged_step_once(stopped):
    steps = stopped.journaled()
    assert [step for step, _ in read_tb_scalars(stopped.workdir / "tb")[LOSS]] == steps
    assert [row["_step"] for row in read_wandb_history(stopped.workdir / "wandb") if LOSS in row] == steps
