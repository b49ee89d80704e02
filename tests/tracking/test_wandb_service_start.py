"""W&B's local service (wandb-core, which every W&B run talks through, offline too) not answering in time at a run's
start, as on a node busy starting a job, where W&B's own 30 s wait for it can pass: the run's W&B is tried again,
not turned off for the run, and gets every step once the service starts."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace

import pytest
from support.readers import read_wandb_history
from support.timing import wait_for

from primus.tracking import TrackingConfig, WandbConfig, start_run
from primus.tracking.journal.run_state import RunState
from primus.tracking.sinks.sink import SinkUnavailable
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.registry import build_sinks

STEPS = range(1, 6)


@pytest.mark.slow
def test_a_service_that_did_not_answer_in_time_is_tried_again_and_gets_every_step(
    tmp_path, wandb_offline, monkeypatch, primus_caplog
):
    import wandb

    wandb.teardown()  # a fresh W&B in this process: it reads its wait for the service from the environment
    monkeypatch.setenv("WANDB_X_SERVICE_WAIT", "0.0001")  # no service answers that fast: the start fails as a slow one
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", wandb=WandbConfig(project="p"), delivery="thread",
                                   exit_deadline_s=120))
    for step in STEPS:
        run.log(step, {"loss": float(step)})

    def said(words: str) -> list[str]:
        return [r.getMessage() for r in primus_caplog.records if words in r.getMessage()]

    wait_for(lambda: said("wandb could not start") or said("is off for this run"), 60, what="W&B's first start to fail")
    monkeypatch.delenv("WANDB_X_SERVICE_WAIT")  # W&B's own wait again: the next try starts the service
    run.finish()

    rows = [r for r in read_wandb_history(tmp_path) if "loss" in r]
    assert [(r["_step"], r["loss"]) for r in rows] == [(s, float(s)) for s in STEPS]
    assert "ServicePollForTokenError" in said("wandb could not start")[0]
    assert said("is off for this run") == [] and said("wandb is delivering again")


class ServicePollForTokenError(Exception):
    """Named as W&B's own (wandb.sdk.lib.service): the sink knows these by name."""


class OnlineStartTimedOut(Exception):
    pass


class StandInWandb:
    """``wandb`` for the sink's open(): each ``init`` raises the next of ``errors``; ``teardown`` is counted."""

    run = None

    def __init__(self, *errors: Exception):
        self.errors, self.modes, self.teardowns = list(errors), [], 0

    def init(self, *, mode: str, **_: object) -> None:
        self.modes.append(mode)
        raise self.errors.pop(0)

    def teardown(self) -> None:
        self.teardowns += 1

    def Settings(self, **settings: object) -> dict:  # noqa: N802 (W&B's name)
        return settings


def test_online_falling_back_offline_is_tried_again_when_the_service_does_not_answer(tmp_path, monkeypatch):
    """Online failed (a server out of reach), and the offline run it falls back to found no service: the whole
    start is tried again by the worker, not W&B turned off for the run."""
    cfg = TrackingConfig(run_dir=tmp_path, wandb=WandbConfig(mode="online")).resolve()
    cfg = replace(cfg, wandb=replace(cfg.wandb, run_id="r1"))
    [sink] = build_sinks(["wandb"], cfg, RunMeta.build(cfg), RunState(tmp_path))
    wandb = StandInWandb(OnlineStartTimedOut("no answer from the server"), ServicePollForTokenError("no port file"))
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    with pytest.raises(ServicePollForTokenError):
        sink.open()
    assert (wandb.modes, wandb.teardowns) == (["online", "offline"], 2)  # the online run's service, then the failed one
    wandb.errors = [OnlineStartTimedOut("no answer from the server"), ValueError("a bad setting")]
    with pytest.raises(SinkUnavailable, match="failed online .* and offline .*a bad setting"):
        sink.open()  # any other failure of both starts: W&B is off for the run, as before
