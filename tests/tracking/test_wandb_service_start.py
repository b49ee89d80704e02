"""W&B's local service (wandb-core, which every W&B run talks through, offline too) not answering in time at a run's
start, as on a node busy starting a job, where W&B's own 30 s wait for it can pass: the run's W&B is tried again,
not turned off for the run, and gets every step once the service starts."""

from __future__ import annotations

import logging

import pytest
from support.readers import read_wandb_history
from support.timing import wait_for

from primus.tracking import TrackingConfig, WandbConfig, start_run

pytestmark = pytest.mark.slow

STEPS = range(1, 6)


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
