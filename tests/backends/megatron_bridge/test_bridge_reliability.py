"""Megatron-Bridge through a dead MLflow server and then SIGTERM (the scheduler's preemption), in one real training
(tiny_pretrain.py under ``primus-run`` and torchrun, which forwards the signal to its worker): the server is killed
once the run receives steps, the training goes on, the server comes back and gets the steps it missed, then the
signal stops the training. The MLflow run ends KILLED, every step the training logged (its journal) is in every
tracker exactly once — MLflow, TensorBoard and W&B (offline) — and Bridge's own writers wrote nothing. A second
training with every tracker off gives the same losses. The server is the session's fault server, as in
tests/reliability."""

from __future__ import annotations

import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from bridge_runs import BRIDGE_PYTHON, CONSOLE_LOSS, SCRIPT, TIMEOUT_S
from support.journal_files import journal_lines, run_dirs_under
from support.launch import FinishedRun, kill_torchrun, start, torchrun_workers, wait_or_kill
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history, wandb_files
from support.this_primus import this_primus_folder, with_this_primus

pytestmark = pytest.mark.slow

EXPERIMENT, LOSS = "bridge-sigterm", "lm loss"
ITERATIONS = 2000  # far more than it trains before the signal: it is stopped, it does not finish
KILL_AFTER = 3  # steps in MLflow before the server is killed
TRAINED_WHILE_DOWN = 5  # steps the journal gains with no server at all
COMPARED = 8  # steps whose loss the untracked training must give exactly
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


class Launched:
    """tiny_pretrain.py for ITERATIONS steps under ``primus-run`` and torchrun in ``workdir``, with ``env`` (Bridge's
    logger settings; none: every tracker off), not waited for."""

    def __init__(self, workdir: Path, env: dict[str, str], this_primus: Path):
        primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
        command = [primus_run, str(BRIDGE_PYTHON), "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node", "1", str(SCRIPT)]
        self.workdir, self.started = workdir, time.monotonic()
        self.process = start(command, workdir, workdir / "run.log", with_this_primus(this_primus, {
            "TINY_ITERATIONS": str(ITERATIONS), "TINY_EVAL_INTERVAL": str(ITERATIONS),
            "PRIMUS_OUTPUT_ROOT": str(workdir / "primus"), "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1", **env}))

    def finished(self, code: int | None) -> FinishedRun:
        return FinishedRun(code, self.workdir / "run.log", time.monotonic() - self.started)

    def until(self, predicate, what: str) -> None:
        while not predicate():
            if self.process.poll() is not None or time.monotonic() > self.started + TIMEOUT_S:
                raise AssertionError(f"{what} never happened: {self.finished(wait_or_kill(self.process, 1)).explain()}")
            time.sleep(0.05)


def console_losses(log: str) -> dict[int, float]:
    return {int(step): float(value) for step, value in CONSOLE_LOSS.findall(log)}


@pytest.fixture(scope="module")
def this_primus(tmp_path_factory) -> Path:
    return this_primus_folder(tmp_path_factory.mktemp("primus"))


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, _fault_server, this_primus) -> Stopped:
    from mlflow import MlflowClient

    server, client = _fault_server, MlflowClient(_fault_server.uri)
    workdir = tmp_path_factory.mktemp("bridge-faults")
    training = Launched(workdir, {
        "TINY_TENSORBOARD_DIR": str(workdir / "tb"), "TINY_MLFLOW_EXPERIMENT": EXPERIMENT,
        "TINY_MLFLOW_RUN_NAME": "stopped", "TINY_MLFLOW_TRACKING_URI": server.uri, "TINY_WANDB_PROJECT": EXPERIMENT,
        "TINY_WANDB_EXP_NAME": "stopped", "TINY_WANDB_SAVE_DIR": str(workdir / "wandb"), "WANDB_MODE": "offline",
        "WANDB_DIR": str(workdir / "wandb")}, this_primus)
    process = training.process
    try:
        training.until(lambda: _in_mlflow(client) >= KILL_AFTER, f"MLflow receiving {KILL_AFTER} steps")
        server.kill()
        down_at = _logged(workdir)
        training.until(lambda: _logged(workdir) >= down_at + TRAINED_WHILE_DOWN, "training on with the server down")
        # the training waits (its worker stopped; the delivery process, a process of its own, goes on) while the
        # server comes back and gets every step it missed, so it cannot finish before the signal
        [worker] = torchrun_workers(process.pid).values()
        worker.suspend()
        server.restart()
        training.until(lambda: _in_mlflow(client) >= _logged(workdir), "MLflow receiving the steps it missed")
        worker.resume()
        process.send_signal(signal.SIGTERM)  # primus-run became the launcher (exec): torchrun forwards it
        code = wait_or_kill(process, EXIT_S)
    finally:
        kill_torchrun(process)
        if not (server.running() and server.healthy()):
            server.restart()
    return Stopped(training.finished(code), workdir)


@pytest.fixture(scope="module")
def untracked(tmp_path_factory, this_primus) -> FinishedRun:
    """The same training with every tracker off (the CPU patches still on), stopped after COMPARED steps."""
    training = Launched(tmp_path_factory.mktemp("bridge-untracked"), {}, this_primus)
    try:
        training.until(lambda: len(console_losses(training.finished(None).output)) >= COMPARED, f"{COMPARED} steps")
    finally:
        kill_torchrun(training.process)
        code = wait_or_kill(training.process, 0.1)
    return training.finished(code)


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


def test_the_loss_is_the_same_with_tracking_on_and_off(stopped, untracked):
    tracked, plain = console_losses(stopped.finished.output), console_losses(untracked.output)
    assert len(plain) >= COMPARED, untracked.explain()
    assert [plain[s] for s in range(1, COMPARED + 1)] == [tracked[s] for s in range(1, COMPARED + 1)]


def test_bridges_own_writers_wrote_nothing(stopped):
    """One TensorBoard event file (the delivery process's), one W&B run (the hub's); the one MLflow run is checked
    above."""
    assert len(list((stopped.workdir / "tb").glob("events.out.tfevents.*"))) == 1
    assert len(wandb_files(stopped.workdir / "wandb")) == 1
