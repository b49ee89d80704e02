"""A process killed before its W&B worker delivered anything: `primus tracking sync` replays the
journal into the same W&B run (offline here) and marks it KILLED. The worker is a thread of the killed
process here (delivery="thread"), as when a whole job is SIGKILLed with its delivery process; a delivery
process that survives the kill finishes the job itself (test_delivery_process.py)."""

import re
import signal
import subprocess
import sys
import textwrap

import pytest
from support.readers import read_wandb_history, wandb_run_ids

from primus.cli.main import main as primus_cli
from primus.tracking.journal.run_state import RunState

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from primus.tracking import TrackingConfig, WandbConfig, start_run
    run = start_run(TrackingConfig(run_dir=Path(sys.argv[1]), wandb=WandbConfig(project="crash"), delivery="thread"))
    for step in range(25):
        run.log(step, {"loss": step / 10})
    assert run.flush(0.5) is False  # the journal has it all; W&B is still starting (importing wandb alone takes longer)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_sync_replays_a_killed_run_into_its_wandb_run(tmp_path, wandb_offline, capsys):
    run_dir = tmp_path / "run"
    child = subprocess.run([sys.executable, "-c", CHILD, str(run_dir)], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert read_wandb_history(wandb_offline) == []

    assert primus_cli(["tracking", "sync", str(run_dir)]) == 0
    captured = capsys.readouterr()
    assert "wandb: delivered, status KILLED" in captured.out
    # the progress line, to stderr: at least once, at the end, with everything sent
    [*_, last] = re.findall(r"wandb: (\d+) records, ([\d.]+) of ([\d.]+) MiB of the journal sent", captured.err)
    assert int(last[0]) >= 25 and last[1] == last[2], captured.err
    rows = [r for r in read_wandb_history(wandb_offline) if "loss" in r]
    assert [(r["_step"], r["loss"]) for r in rows] == [(s, s / 10) for s in range(25)]
    assert wandb_run_ids(wandb_offline) == {RunState(run_dir).section("wandb")["id"]}
    assert primus_cli(["tracking", "sync", str(run_dir)]) == 0  # nothing left: W&B is not touched again
    assert read_wandb_history(wandb_offline)[-1]["_step"] == 24
