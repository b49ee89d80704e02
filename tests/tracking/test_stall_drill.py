"""The stall drill on real processes: two ranks in a gloo group, one frozen with SIGSTOP past a log step. While it
hangs a ``stalled`` alert reaches a local HTTP server and the writer's saved stacks show it waiting in the
collective; after SIGCONT a ``resumed`` alert follows, and the run ends FINISHED with every step once in MLflow and
the alert's tag. The webhook's URL is in no file of the run and in no tracker."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.readers import mlflow_history
from support.timing import wait_for
from support.webhook_server import SECRET_PATH

from primus.tracking.health.webhook import WEBHOOK_ENV

pytestmark = pytest.mark.slow

RANK = Path(__file__).with_name("stall_drill_rank.py")
STEPS = 30
STOP_AFTER = 8


def test_a_frozen_rank_is_a_stall_with_stacks_then_resumed(tmp_path, monkeypatch, webhook_receiver, mlflow_client):
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    run_dir = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    logs = [open(tmp_path / f"rank{r}.log", "w") for r in (0, 1)]
    ranks = [subprocess.Popen([sys.executable, str(RANK), str(r), port, str(run_dir), str(STEPS)], env=env,
                              stdout=subprocess.PIPE if r == 1 else logs[0], stderr=logs[r], text=True)
             for r in (0, 1)]
    try:
        while ranks[1].stdout.readline().strip() != f"step {STOP_AFTER}":
            assert ranks[1].poll() is None, (tmp_path / "rank1.log").read_text()
        os.kill(ranks[1].pid, signal.SIGSTOP)
        frozen_at = time.time()
        wait_for(lambda: any(b["kind"] == "stalled" for b in webhook_receiver.bodies), 60, "the stalled alert")
        [stalled] = [b for b in webhook_receiver.bodies if b["kind"] == "stalled"]
        assert stalled["time"] >= frozen_at and STOP_AFTER <= stalled["iteration"] <= STOP_AFTER + 1
        assert stalled["experiment"] == "stall-drill" and ranks[0].poll() is None  # told while it hangs
        writer_stacks = run_dir / "stacks" / f"{socket.gethostname()}-{ranks[0].pid}.txt"
        wait_for(lambda: "in all_reduce" in writer_stacks.read_text(), 30, "the writer's stacks")
        assert "in train_step" in writer_stacks.read_text()

        os.kill(ranks[1].pid, signal.SIGCONT)
        ranks[1].stdout.read()
        assert [r.wait(180) for r in ranks] == [0, 0], (tmp_path / "rank0.log").read_text()
    finally:
        for r in ranks:
            if r.poll() is None:
                r.kill()
                r.wait()
        for f in logs:
            f.close()

    kinds = [b["kind"] for b in webhook_receiver.bodies]
    assert kinds == ["stalled", "resumed"], webhook_receiver.bodies
    frozen_stacks = run_dir / "stacks" / f"{socket.gethostname()}-{ranks[1].pid}.txt"
    assert 'stall_drill_rank.py", line' in frozen_stacks.read_text()  # a stopped rank dumps once it runs again
    console = (tmp_path / "rank0.log").read_text()
    assert "[primus] ALERT stalled run run iteration" in console and "[primus] ALERT resumed" in console

    [mlrun] = mlflow_client.search_runs(
        [mlflow_client.get_experiment_by_name("stall-drill").experiment_id])
    assert mlrun.info.status == "FINISHED"
    assert [s for s, _ in mlflow_history(mlflow_client, mlrun.info.run_id, "lm loss")] == list(range(1, STEPS + 1))
    assert mlrun.data.tags["primus.alert.stalled"].startswith(f"iteration {stalled['iteration']}: no step for ")
    assert mlrun.data.tags["primus.alert.resumed"].startswith("iteration ")
    assert mlflow_history(mlflow_client, mlrun.info.run_id, "health/alerts")[-1][1] == 2.0
    shown = [*mlrun.data.tags.values(), *mlrun.data.params.values(), console]
    assert not any(SECRET_PATH in text for text in shown)
    assert not any(SECRET_PATH in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
