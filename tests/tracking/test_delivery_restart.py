"""A delivery process that dies while its run goes on (SIGKILLed, as the OOM killer does) is started again by the
training process: each tracker resumes from its saved cursor in the same tracker run, every step arrives once, and
each restart is a `delivery_restarted` alert on the console, at the webhook and in the trackers. One that dies as it
starts is restarted at most the bound, then reported, and `primus tracking sync` delivers the rest."""

from __future__ import annotations

import logging
import threading
import time

import psutil
import pytest
from support.launch import delivery_processes
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history
from support.timing import wait_for

from primus.cli.main import main as primus_cli
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run
from primus.tracking.delivery.process import CHILD_MODULE
from primus.tracking.delivery.restarts import LIMIT
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import Alert, AlertKind, event_of
from primus.tracking.journal.run_state import RunState

pytestmark = pytest.mark.slow

KILLS = 3
STEPS_BETWEEN = 8
NEW_CHILD_WITHIN_S = 30.0  # started again "within seconds": generous for a loaded box
DYING_SITE = """
import os, sys
if "{module}" in sys.orig_argv:  # a delivery process, and only one: it dies as it starts
    with open(os.environ["DYING_STARTS"], "a") as starts:
        starts.write("started\\n")
    os._exit(3)
"""


def delivery_children() -> dict[int, psutil.Process]:
    """This process's delivery processes still alive."""
    return delivery_processes(psutil.Process())


def new_child(known: set[int]) -> psutil.Process:
    """The delivery process started after those ``known``, waited for up to NEW_CHILD_WITHIN_S."""
    until = time.monotonic() + NEW_CHILD_WITHIN_S
    while time.monotonic() < until:
        fresh = [p for pid, p in delivery_children().items() if pid not in known and p.is_running()]
        if fresh:
            return fresh[0]
        time.sleep(0.05)
    raise AssertionError(f"no delivery process started within {NEW_CHILD_WITHIN_S} s")


def restarts_journaled(run_dir) -> list:
    return [a for r in read_all(run_dir) if isinstance(a := event_of(r), Alert) and a.kind == AlertKind.DELIVERY_RESTARTED]


def restarts_posted(receiver) -> int:
    return [b["kind"] for b in receiver.bodies].count("delivery_restarted")


def test_a_killed_delivery_process_comes_back_and_every_step_arrives_once(
    tmp_path, mlflow_client, wandb_offline, webhook_receiver, monkeypatch, capfd
):
    monkeypatch.setenv("PRIMUS_ALERT_WEBHOOK", webhook_receiver.url)
    known: set[int] = set(delivery_children())
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="delivery-restarts", exit_deadline_s=120,
                                   tensorboard=TensorBoardConfig(log_dir=tmp_path / "tb"),
                                   wandb=WandbConfig(project="restarts"), mlflow=MlflowConfig()))
    step = 0
    for kill in range(KILLS):
        child = new_child(known)
        known.add(child.pid)
        # the restart before this one told (by this child's watch, at its first poll) before it is killed: a child
        # killed sooner leaves it to the next one (the test below)
        wait_for(lambda n=kill: restarts_posted(webhook_receiver) == n, 60, f"delivery_restarted alert {kill} posted")
        for _ in range(STEPS_BETWEEN):
            step += 1
            run.log(step, {"loss": 1.0 / step})
        assert run.flush(120)  # delivered so far, cursors saved: the kill comes mid-run, not before anything
        step += 1
        run.log(step, {"loss": 1.0 / step})  # and one more, which the killed process may or may not have sent
        child.kill()
    new_child(known)
    wait_for(lambda: restarts_posted(webhook_receiver) == KILLS, 60, f"delivery_restarted alert {KILLS} posted")
    for _ in range(STEPS_BETWEEN):
        step += 1
        run.log(step, {"loss": 1.0 / step})
    run.finish()
    expected = [(s, 1.0 / s) for s in range(1, step + 1)]

    run_id = RunState(tmp_path / "run").section("mlflow")["run_id"]
    assert mlflow_history(mlflow_client, run_id, "loss") == expected
    assert mlflow_client.get_run(run_id).info.status == "FINISHED"
    assert [s for s, _ in read_tb_scalars(tmp_path / "tb")["loss"]] == [s for s, _ in expected]
    # W&B holds on until its run ends, so a restart resends to the same run from its saved cursor: the killed process's
    # offline file may already hold some of those steps, which W&B keeps once (a step at or below its last is dropped)
    assert wandb_kept([r["_step"] for r in read_wandb_history(wandb_offline) if "loss" in r]) == [s for s, _ in expected]

    alerts = restarts_journaled(tmp_path / "run")
    assert len(alerts) == KILLS, alerts
    for n, alert in enumerate(alerts, 1):
        assert f"was killed (signal 9); restarted ({n} of {LIMIT} allowed within 10 min), resuming " in alert.text
        assert "tensorboard at step" in alert.text or "tensorboard up to date" in alert.text
    console = capfd.readouterr().err
    assert console.count("[primus] ALERT delivery_restarted") == KILLS, console[-3000:]
    assert restarts_posted(webhook_receiver) == KILLS
    assert run.stats()["delivery_restarts"] == KILLS


def test_a_delivery_process_dying_as_it_starts_is_restarted_at_most_the_bound(
    tmp_path, mlflow_client, monkeypatch, primus_caplog
):
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(DYING_SITE.format(module=CHILD_MODULE))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))  # the delivery process's, not this one's
    monkeypatch.setenv("DYING_STARTS", str(tmp_path / "starts"))
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="delivery-dies", exit_deadline_s=20,
                                   mlflow=MlflowConfig()))
    for step in range(1, 26):
        run.log(step, {"loss": 1.0 / step})
    until = time.monotonic() + NEW_CHILD_WITHIN_S
    while time.monotonic() < until and not run.stats()["sinks"]["mlflow"]["disabled"]:
        time.sleep(0.05)  # the restarts, then the giving up
    run.finish()
    assert (tmp_path / "starts").read_text().count("started") == 1 + LIMIT  # no loop
    assert run.stats()["sinks"]["mlflow"]["disabled"]
    warnings = [r.getMessage() for r in primus_caplog.records]
    assert any(f"the delivery process for mlflow exited with code 3 after {LIMIT} restarts" in w and
               f"primus tracking sync {tmp_path / 'run'}" in w for w in warnings), warnings

    assert primus_cli(["tracking", "sync", str(tmp_path / "run")]) == 0
    run_id = RunState(tmp_path / "run").section("mlflow")["run_id"]
    assert mlflow_history(mlflow_client, run_id, "loss") == [(s, 1.0 / s) for s in range(1, 26)]


def test_a_delivery_process_killed_during_the_exit_deadline_is_not_started_again(tmp_path, primus_caplog):
    """The exit stays bounded: the run ends by its deadline and names what was not delivered, with the fix."""
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    deadline_s = 6.0
    known = set(delivery_children())
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", exit_deadline_s=deadline_s,
                                   mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:9")))  # nobody listens there
    child = new_child(known)
    for step in range(1, 6):
        run.log(step, {"loss": 1.0 / step})
    threading.Timer(1.0, child.kill).start()  # while finish() waits for MLflow, retried in vain
    started = time.monotonic()
    run.finish()
    assert time.monotonic() - started < deadline_s + 3.0  # the deadline and the kill grace, not a second deadline
    assert run.stats()["delivery_restarts"] == 0 and set(delivery_children()) <= known | {child.pid}
    warnings = [r.getMessage() for r in primus_caplog.records]
    assert any("the delivery process for mlflow was killed (signal 9); these trackers get nothing more" in w
               and f"primus tracking sync {tmp_path / 'run'}" in w for w in warnings), warnings


def test_a_process_killed_before_it_told_the_restart_before_it_leaves_that_alert_to_the_next(
    tmp_path, webhook_receiver, monkeypatch, capfd
):
    """Killed again at once, before its watch read anything: the next process's watch reads from before the first
    restart's alert, so both restarts reach the console and the webhook, in order, once each."""
    monkeypatch.setenv("PRIMUS_ALERT_WEBHOOK", webhook_receiver.url)
    known = set(delivery_children())
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", exit_deadline_s=60,
                                   tensorboard=TensorBoardConfig(log_dir=tmp_path / "tb")))
    first = new_child(known)
    known.add(first.pid)
    run.log(1, {"loss": 1.0})
    assert run.flush(60)
    first.kill()
    second = new_child(known)
    known.add(second.pid)
    # a step between, so the two restarts are two alerts to the webhook too (it posts a kind once per iteration: the
    # ranks sharing a node's process all journal the same stall)
    run.log(2, {"loss": 0.5})
    wait_for(lambda: len(restarts_journaled(tmp_path / "run")) == 1, 30, "the first restart's alert journaled")
    second.kill()  # as it starts: its watch has not polled yet
    new_child(known)
    wait_for(lambda: restarts_posted(webhook_receiver) == 2, 60, "both delivery_restarted alerts posted")
    run.finish()
    texts = [b["text"] for b in webhook_receiver.bodies if b["kind"] == "delivery_restarted"]
    assert [f"restarted ({n} of {LIMIT} " in text for n, text in enumerate(texts, 1)] == [True, True], texts
    assert capfd.readouterr().err.count("[primus] ALERT delivery_restarted") == 2
    assert [s for s, _ in read_tb_scalars(tmp_path / "tb")["loss"]] == [1, 2]


def wandb_kept(steps: list[int]) -> list[int]:
    """The steps a W&B run keeps of those logged to it in order: each above the last kept."""
    kept: list[int] = []
    for step in steps:
        if not kept or step > kept[-1]:
            kept.append(step)
    return kept
