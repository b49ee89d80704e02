"""W&B online with no reachable server (WANDB_BASE_URL on a closed loopback port, a well-formed fake
key): the wait is bounded by init_timeout_s, training never waits, one clear warning, and every step
is in the journal and in the offline run W&B falls back to."""

from __future__ import annotations

import logging
import time

import pytest
from support.journal_files import journal_lines
from support.readers import read_wandb_history
from support.timing import LOAD_FACTOR, timed

from primus.tracking import TrackingConfig, WandbConfig, start_run

pytestmark = pytest.mark.slow

FAKE_KEY = "0123456789abcdef0123456789abcdef01234567"
INIT_TIMEOUT_S = 3.0
EXIT_DEADLINE_S = 30.0


def test_unreachable_wandb_server_is_bounded_and_loses_nothing(tmp_path, monkeypatch, primus_caplog):
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_API_KEY", FAKE_KEY)
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    # the same start with W&B offline (no server to wait for): it pays what the online start must pay too, the
    # check of the WANDB_* variables by W&B's own settings class in a child Python (seconds on a loaded box)
    baseline, baseline_start_s = timed(start_run, TrackingConfig(run_dir=tmp_path / "baseline",
                                                                 wandb=WandbConfig(project="p", mode="offline")))
    baseline.finish()
    run, start_s = timed(start_run, TrackingConfig(run_dir=tmp_path / "run", exit_deadline_s=EXIT_DEADLINE_S,
                                                   wandb=WandbConfig(project="p", init_timeout_s=INIT_TIMEOUT_S)))
    assert start_s < INIT_TIMEOUT_S / 2 + LOAD_FACTOR * baseline_start_s  # W&B's start is not waited for
    costs = []
    for step in range(20):
        t = time.perf_counter()
        run.log(step, {"loss": float(step)})
        costs.append(time.perf_counter() - t)
        time.sleep(0.05)
    # no call waits for W&B's start: one that did would take the whole init_timeout_s; half of it leaves room for
    # a descheduled thread on a loaded box (a tenth failed at load 10 on 2 cores)
    assert max(costs) < INIT_TIMEOUT_S / 2
    _, finish_s = timed(run.finish)
    assert finish_s < INIT_TIMEOUT_S + EXIT_DEADLINE_S  # the start's timeout, then the offline run within the deadline

    warnings = [r.getMessage() for r in primus_caplog.records if r.levelno >= logging.WARNING and r.name.startswith("primus")]
    assert len(warnings) == 1, warnings
    assert "W&B did not start online within init_timeout_s=3" in warnings[0] and "wandb sync" in warnings[0]
    journal = journal_lines(tmp_path / "run")
    assert [r["d"]["loss"] for r in journal if r["k"] == "m"] == [float(s) for s in range(20)]
    rows = [r for r in read_wandb_history(tmp_path / "run") if "loss" in r]
    assert [(r["_step"], r["loss"]) for r in rows] == [(s, float(s)) for s in range(20)]
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
