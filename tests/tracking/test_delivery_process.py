"""The delivery process: TensorBoard, W&B and MLflow are fed from a child process, so their clients'
Python never runs in the training process; it survives a SIGKILL of the trainer and finishes the
tracker runs (one that dies itself is started again: test_delivery_restart.py)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history

from primus.cli.main import main as primus_cli
from primus.tracking import MlflowConfig, TrackingConfig, start_run
from primus.tracking.journal.files import DELIVERY_LOCK
from primus.tracking.journal.run_state import RunState

pytestmark = pytest.mark.slow

TRAINER = textwrap.dedent("""
    import json, os, signal, sys, time
    from pathlib import Path
    from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
    root, ending = Path(sys.argv[1]), sys.argv[2]
    run = start_run(TrackingConfig(run_dir=root / "run", experiment_name="delivery", exit_deadline_s=60,
                                   tensorboard=TensorBoardConfig(log_dir=root / "tb"), wandb=WandbConfig(project="d"),
                                   mlflow=MlflowConfig()))
    for step in range(1, 26):
        run.log(step, {"loss": 1.0 / step})
    if ending == "kill":
        time.sleep(0.5)  # some hub ticks (every 0.1 s) journaled the steps; delivery has barely started
        os.kill(os.getpid(), signal.SIGKILL)  # no finish, no flush
    assert run.flush(120)
    print(json.dumps({"imported": sorted(m for m in ("mlflow", "wandb", "torch", "tensorboard") if m in sys.modules),
                      "stats": run.stats()}))
    run.finish()
""")
STEPS = [(s, 1.0 / s) for s in range(1, 26)]


def assert_float32_steps(points: list[tuple[int, float]]) -> None:
    """TensorBoard keeps scalars as float32."""
    assert [s for s, _ in points] == [s for s, _ in STEPS]
    assert [v for _, v in points] == pytest.approx([v for _, v in STEPS], rel=1e-6)


def train(tmp_path, ending: str) -> subprocess.CompletedProcess:
    # returns once the delivery process exited too: it inherited the captured stdout and stderr
    return subprocess.run([sys.executable, "-c", TRAINER, str(tmp_path), ending], capture_output=True, text=True,
                          timeout=240)


def test_trackers_are_fed_from_another_process(tmp_path, mlflow_client, wandb_offline):
    done = train(tmp_path, "finish")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["imported"] == []  # no tracker client (nor torch for TensorBoard) loaded by the trainer
    assert {name: s["pending_bytes"] for name, s in report["stats"]["sinks"].items()} == \
        {"tensorboard": 0, "wandb": 0, "mlflow": 0}
    run_id = RunState(tmp_path / "run").section("mlflow")["run_id"]
    assert mlflow_history(mlflow_client, run_id, "loss") == STEPS
    assert mlflow_client.get_run(run_id).info.status == "FINISHED"
    assert_float32_steps(read_tb_scalars(tmp_path / "tb")["loss"])
    assert [(r["_step"], r["loss"]) for r in read_wandb_history(wandb_offline) if "loss" in r] == STEPS


def test_a_sigkilled_trainer_still_gets_every_step_delivered_and_its_runs_killed(tmp_path, mlflow_client,
                                                                                 wandb_offline, capsys):
    done = train(tmp_path, "kill")
    assert done.returncode == -signal.SIGKILL, done.stderr
    state = RunState(tmp_path / "run")
    assert state.section("run")["status"] == "KILLED"
    run = mlflow_client.get_run(state.section("mlflow")["run_id"])
    assert run.info.status == "KILLED"
    assert mlflow_history(mlflow_client, run.info.run_id, "loss") == STEPS
    assert_float32_steps(read_tb_scalars(tmp_path / "tb")["loss"])
    assert [(r["_step"], r["loss"]) for r in read_wandb_history(wandb_offline) if "loss" in r] == STEPS
    assert primus_cli(["tracking", "sync", str(tmp_path / "run")]) == 0  # nothing left to send, nothing twice
    assert mlflow_history(mlflow_client, run.info.run_id, "loss") == STEPS




PRINTING_TRAINER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from primus.log_capture import capture_console, stop_console_capture
    from primus.tracking import TrackingConfig, WandbConfig, start_run
    root = Path(sys.argv[1])
    capture_console(root / "console.log")
    run = start_run(TrackingConfig(run_dir=root / "run", wandb=WandbConfig(project="printing")))
    run.log(1, {"loss": 1.0})
    assert run.flush(120)
    run.finish()
    stop_console_capture()
""")


def test_what_the_tracker_clients_print_reaches_the_trainers_console_capture_redacted(tmp_path, monkeypatch):
    secret = "s3cr3t-d3l1very-7c1e"
    wandb_dir = tmp_path / f"wandb-{secret}"  # W&B prints its offline run's path when it finishes
    wandb_dir.mkdir()
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(wandb_dir), "MY_SERVICE_TOKEN": secret}
    env.pop("WANDB_SILENT", None)
    done = subprocess.run([sys.executable, "-c", PRINTING_TRAINER, str(tmp_path)], capture_output=True, text=True,
                          timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    console = done.stdout + done.stderr
    captured = (tmp_path / "console.log").read_text()
    assert "wandb sync" in console and "wandb sync" in captured  # printed by the delivery process's W&B
    assert secret not in console and secret not in captured


def test_a_relaunchs_delivery_waits_for_the_earlier_launchs_to_end(tmp_path, mlflow_client):
    """As after torchrun restarts a SIGKILLed trainer whose delivery process is still sending its steps: the
    new launch's delivery process opens no tracker run until the earlier one let go of the run directory."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / DELIVERY_LOCK, "a") as earlier:
        fcntl.flock(earlier, fcntl.LOCK_EX)  # the earlier launch's delivery process, still at work
        run = start_run(TrackingConfig(run_dir=run_dir, experiment_name="delivery-waits", mlflow=MlflowConfig()))
        for step, loss in STEPS:
            run.log(step, {"loss": loss})
        assert run.flush(3) is False
        assert RunState(run_dir).section("mlflow") == {}  # no MLflow run opened meanwhile
    assert run.flush(120)
    run.finish()
    run_id = RunState(run_dir).section("mlflow")["run_id"]
    assert mlflow_history(mlflow_client, run_id, "loss") == STEPS


def test_sync_waits_for_a_delivery_process_still_sending(tmp_path, mlflow_client, capsys):
    """The delivery lock is held from the moment the delivery process starts (taken before it, handed to it), and
    `primus tracking sync` waits for it within its timeout: never two feeding the same tracker runs."""
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="sync-waits", mlflow=MlflowConfig()))
    with open(tmp_path / "run" / DELIVERY_LOCK, "a") as probe, pytest.raises(BlockingIOError):
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held already, before the child imported anything
    run.log(1, {"loss": 1.0})
    run.finish()
    delivering = open(tmp_path / "run" / DELIVERY_LOCK, "a")
    fcntl.flock(delivering, fcntl.LOCK_EX)  # an orphaned delivery process, still at work
    assert primus_cli(["tracking", "sync", str(tmp_path / "run"), "--timeout", "1"]) == 2
    assert "a delivery process is still sending" in capsys.readouterr().err
    threading.Timer(1.0, delivering.close).start()  # ...which ends a second later
    assert primus_cli(["tracking", "sync", str(tmp_path / "run")]) == 0
    assert "waiting for the delivery process still sending" in capsys.readouterr().err
