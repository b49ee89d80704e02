"""Run health from the process that delivers the run: a real run, its real delivery process (or, with no
tracker, a thread of the run), a real HTTP server as the webhook. A stall is told while nothing is logged, with the
stacks of the rank; steps again are ``resumed``; a failed run is told; each alert is journaled for the trackers."""

from __future__ import annotations

import os
import time

import pytest
from support.journal_files import journal_lines
from support.readers import read_tb_texts
from support.timing import wait_for
from support.webhook_server import SECRET_PATH

from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.health.webhook import WEBHOOK_ENV
from primus.tracking.settings.config import HealthSettings

STALL = HealthSettings(stall_after_s=1.5, startup_s=60)


def alerts_in_journal(run_dir):
    return [r["d"] for r in journal_lines(run_dir) if r["k"] == "e" and r["d"].get("event") == "alert"]


def test_a_stall_is_told_while_it_lasts_with_the_stacks_then_resumed(tmp_path, monkeypatch, capfd, webhook_receiver):
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", tensorboard=TensorBoardConfig(tmp_path / "tb"),
                                   experiment_name="health", health=STALL))
    for step in range(1, 6):
        run.log(step, {"lm loss": 3.0, "perf/tokens_per_sec": 1000.0})
        time.sleep(0.1)
    wait_for(lambda: webhook_receiver.bodies, 30, what="the stalled alert at the webhook")
    [stalled] = webhook_receiver.bodies
    assert stalled["kind"] == "stalled" and stalled["iteration"] == 5
    assert stalled["run"] == "run" and stalled["experiment"] == "health" and stalled["host"] == os.uname().nodename
    assert stalled["text"].startswith("[primus] ALERT stalled run run iteration 5: no step for ")
    [stacks] = (tmp_path / "run" / "stacks").glob(f"*-{os.getpid()}.txt")
    wait_for(lambda: "test_a_stall_is_told_while_it_lasts" in stacks.read_text(), 30, what="this process's stacks")

    run.log(6, {"lm loss": 3.0})
    wait_for(lambda: len(webhook_receiver.bodies) == 2, 30, what="the resumed alert")
    assert webhook_receiver.bodies[1]["kind"] == "resumed" and webhook_receiver.bodies[1]["iteration"] == 6
    run.finish()

    assert [(a["kind"], a["iteration"], a["notified"]) for a in alerts_in_journal(tmp_path / "run")] == [
        ("stalled", 5, True), ("resumed", 6, True)]
    texts = read_tb_texts(tmp_path / "tb")
    assert texts["primus.alert.stalled/text_summary"][0][1].startswith("iteration 5: no step for ")
    err = capfd.readouterr().err
    assert "[primus] ALERT stalled run run iteration 5: no step for " in err
    assert "[primus] ALERT resumed run run iteration 6: steps again after " in err
    assert len(webhook_receiver.bodies) == 2  # nothing after the run ended
    assert SECRET_PATH not in err and not any(
        SECRET_PATH in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())


def test_a_failed_run_is_told_once_with_its_reason_redacted(tmp_path, monkeypatch, capfd, webhook_receiver):
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789abcdef")
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", tensorboard=TensorBoardConfig(tmp_path / "tb")))
    run.log(3, {"lm loss": 2.0})
    run._exit_handlers.why = "RuntimeError: cannot reach tok-0123456789abcdef"
    run.finish("FAILED")
    [failed] = webhook_receiver.bodies
    assert failed["kind"] == "failed" and failed["iteration"] == 3
    assert failed["text"].endswith("iteration 3: RuntimeError: cannot reach ***")
    [journaled] = alerts_in_journal(tmp_path / "run")
    assert journaled["text"] == "RuntimeError: cannot reach ***" and journaled["notified"] is False
    assert capfd.readouterr().err.count("[primus] ALERT failed") == 1


def test_without_a_tracker_the_run_watches_itself_and_a_nan_is_told(tmp_path, monkeypatch, capfd, webhook_receiver):
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    run = start_run(TrackingConfig(run_dir=tmp_path / "run"))
    run.log(1, {"loss_metrics/global_avg_loss": 5.0})
    run.log(2, {"loss_metrics/global_avg_loss": float("nan")})
    wait_for(lambda: webhook_receiver.bodies, 30, what="the nan alert")
    run.finish()
    assert [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies] == [("nan", 2)]
    assert [a["kind"] for a in alerts_in_journal(tmp_path / "run")] == ["nan"]
    assert "[primus] ALERT nan run run iteration 2: loss_metrics/global_avg_loss is nan" in capfd.readouterr().err


@pytest.mark.parametrize("tracker", [True, False], ids=["delivery-process", "watch-thread"])
def test_a_nan_at_the_step_the_run_fails_on_reaches_the_trackers_before_its_end(tmp_path, monkeypatch, capfd,
                                                                               webhook_receiver, tracker):
    """Upstream aborts at the very step of a NaN (MaxText's abort_on_nan_loss): the run's end has the watch read the
    journal first, so the trackers get the nan alert before the failure, not only the console and the webhook."""
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    run = start_run(TrackingConfig(run_dir=tmp_path / "run",
                                   tensorboard=TensorBoardConfig(tmp_path / "tb") if tracker else None))
    run.log(1, {"learning/loss": 5.0})
    run.log(2, {"learning/loss": float("nan")})
    run.finish("FAILED")  # at once: the watch's own pace (a poll a second) would see the NaN after the end
    records = [r["d"] for r in journal_lines(tmp_path / "run") if r["k"] == "e"]
    alerts = [(a["kind"], a["iteration"]) for a in records if a.get("event") == "alert"]
    assert alerts == [("nan", 2), ("failed", 2)] and records[-1]["event"] == "end"
    assert [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies] == [("nan", 2), ("failed", 2)]
    if tracker:
        assert "primus.alert.nan/text_summary" in read_tb_texts(tmp_path / "tb")
    assert capfd.readouterr().err.count("[primus] ALERT nan run run iteration 2") == 1


def test_in_the_nodes_shared_delivery_process_each_run_is_watched_on_its_own(tmp_path, capfd, webhook_receiver,
                                                                              monkeypatch):
    """Two runs of one job share the node's delivery process: the run that stalls is told once, to its own trainer,
    and journaled in its own run only."""
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    runs = {name: start_run(TrackingConfig(run_dir=tmp_path / name, run_name=name, delivery_group=tmp_path,
                                           tensorboard=TensorBoardConfig(tmp_path / f"tb_{name}"),
                                           health=STALL if name == "stalls" else HealthSettings(startup_s=600)))
            for name in ("stalls", "steady")}
    for step in range(1, 4):
        for run in runs.values():
            run.log(step, {"lm loss": 3.0})
        time.sleep(0.1)
    wait_for(lambda: webhook_receiver.bodies, 30, what="the stalled alert")
    for run in runs.values():
        run.finish()
    assert [(b["kind"], b["run"]) for b in webhook_receiver.bodies] == [("stalled", "stalls")]
    assert [a["kind"] for a in alerts_in_journal(tmp_path / "stalls")] == ["stalled"]
    assert alerts_in_journal(tmp_path / "steady") == []
    assert capfd.readouterr().err.count("[primus] ALERT stalled run stalls") == 1


def test_the_ranks_of_one_job_sharing_the_nodes_delivery_process_post_one_hang_once(tmp_path, capfd,
                                                                                    webhook_receiver, monkeypatch):
    """Every rank its own run (TorchTitan's save_for_all_ranks), one job: a hang stalls every rank at the same
    step; the webhook gets it once from the node, while each rank's console and journal get their own alert."""
    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    runs = [start_run(TrackingConfig(run_dir=tmp_path / f"rank{rank}", run_name=f"job-rank{rank}",
                                     experiment_name="job", delivery_group=tmp_path,
                                     tensorboard=TensorBoardConfig(tmp_path / f"tb{rank}"), health=STALL))
            for rank in (0, 1)]
    for step in range(1, 4):
        for run in runs:
            run.log(step, {"lm loss": 3.0})
        time.sleep(0.1)
    for rank in (0, 1):
        wait_for(lambda: alerts_in_journal(tmp_path / f"rank{rank}"), 30, what=f"rank {rank}'s stalled alert")
    for run in runs:
        run.finish()
    assert [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies] == [("stalled", 3)]
    for rank in (0, 1):
        assert [a["kind"] for a in alerts_in_journal(tmp_path / f"rank{rank}")] == ["stalled"]
    err = capfd.readouterr().err
    assert "[primus] ALERT stalled run job-rank0 iteration 3" in err and "ALERT stalled run job-rank1 iteration 3" in err


KILLED_TRAINER = """
import os, signal, sys
from pathlib import Path
from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.journal.reader import last_steps
run_dir = Path(sys.argv[1])
run = start_run(TrackingConfig(run_dir=run_dir, tensorboard=TensorBoardConfig(run_dir.parent / "tb")))
run.log(4, {"lm loss": 2.0})
while last_steps(run_dir).get(None) != 4:
    pass
os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
"""


def test_a_trainer_killed_outright_is_told_by_its_delivery_process(tmp_path, monkeypatch, webhook_receiver):
    import subprocess
    import sys

    monkeypatch.setenv(WEBHOOK_ENV, webhook_receiver.url)
    trainer = subprocess.run([sys.executable, "-c", KILLED_TRAINER, str(tmp_path / "run")], capture_output=True,
                             text=True, timeout=120)
    assert trainer.returncode == -9, trainer.stderr
    wait_for(lambda: webhook_receiver.bodies, 60, what="the killed alert")
    [killed] = webhook_receiver.bodies
    assert (killed["kind"], killed["iteration"]) == ("killed", 4)
    assert "the training process died" in killed["text"]
