"""The slowest rank named (primus_stragglers) on a real 2-process Megatron run on CPU (gloo): a user's own
``sitecustomize``, chained by ``primus-run``, makes rank 0 sleep before each of upstream's forward steps of its first
8 iterations; the writer rank (the last) logs straggler/* to TensorBoard, read back from its event files, and names
rank 0 on the console; the delivery process's health watch posts a ``straggler`` alert to a webhook, and
``straggler_resolved`` in the 8 balanced iterations after them. Rank 0 is not the writer, so the
writer's own tracking work cannot be what makes a rank the slowest. At ``--timing-log-level 2`` upstream times each
rank's batch reads: the slowed rank's is logged, and the alert says its lead is not data wait."""

from __future__ import annotations

import shutil
import socket
import statistics
import sys
from pathlib import Path

import pytest
from megatron_runs import PRETRAIN_GPT, TINY_GPT_ARGS, MegatronRun
from megatron_tracking_runs import toggles
from support.launch import start, wait_or_kill
from support.readers import read_tb_scalars
from support.slow_rank import slow_rank_env
from support.webhook_server import Receiver

from primus.tracking.health.webhook import WEBHOOK_ENV
from primus.tracking.measure.stragglers import (
    BUSY_MAX,
    BUSY_MEDIAN,
    BUSY_MIN,
    SLOWEST_DATA_WAIT,
    SLOWEST_OVER_MEDIAN,
    SLOWEST_RANK,
)

pytestmark = pytest.mark.slow

ITERATIONS = 16
SLOWED = 8  # iterations 1-8 slowed (two forward steps each), 9-16 not: a straggler, then none
SLOW_RANK = 0
SLEEP_S = 0.5  # before each forward step: a lead of ~0.5 s, twice the alert's floor
FORWARD_STEP = "megatron.core.pipeline_parallel.schedules:forward_step"


@pytest.fixture(scope="module")
def receiver():
    """The alert webhook's receiver for the module's run (a real HTTP server)."""
    served = Receiver()
    yield served
    served.close()


@pytest.fixture(scope="module")
def slow_rank_run(tmp_path_factory, receiver) -> MegatronRun:
    folder = tmp_path_factory.mktemp("stragglers")
    primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
    command = [primus_run, sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               str(PRETRAIN_GPT), *TINY_GPT_ARGS, "--train-iters", str(ITERATIONS), *toggles(True, False, False),
               "--tensorboard-dir", "tb", "--primus-stragglers", "true", "--timing-log-level", "2"]
    env = {**slow_rank_env(folder / "site", FORWARD_STEP, SLOW_RANK, SLEEP_S, 2 * SLOWED), WEBHOOK_ENV: receiver.url}
    process = start(command, folder, folder / "run.log", env)
    return MegatronRun(wait_or_kill(process, 300), folder / "run.log", 0)


def figures(run: MegatronRun) -> dict[str, dict[int, float]]:
    """The run's TensorBoard scalars, {tag: {step: value}}."""
    [logdir] = {p.parent for p in (run.log_path.parent / "tb").rglob("events.out.tfevents.*")}
    return {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}


def test_the_slowed_rank_is_named_on_most_log_steps(slow_rank_run):
    slow_rank_run.assert_trained(ITERATIONS)
    scalars = figures(slow_rank_run)
    logged = list(range(2, ITERATIONS + 1))  # the first log step only starts the clock
    for name in (BUSY_MIN, BUSY_MEDIAN, BUSY_MAX, SLOWEST_RANK, SLOWEST_OVER_MEDIAN, SLOWEST_DATA_WAIT):
        assert sorted(scalars[name]) == logged, (name, scalars.get(name))
    slowed = logged[: SLOWED - 1]
    named = [step for step in slowed if scalars[SLOWEST_RANK][step] == SLOW_RANK]
    assert len(named) > len(slowed) / 2, scalars[SLOWEST_RANK]
    # two micro-batches per rank and step, 0.5 s of sleep each: most of the 1 s shows as the slow rank's lead,
    # typically (the other rank may be busy with its own work, e.g. the writer's, or lose the CPU to a neighbour)
    lead = {s: scalars[BUSY_MAX][s] - scalars[BUSY_MIN][s] for s in named}
    assert statistics.median(lead.values()) >= 0.15, lead
    assert all(scalars[BUSY_MIN][s] <= scalars[BUSY_MEDIAN][s] <= scalars[BUSY_MAX][s] for s in logged)
    assert f"[primus] slowest rank {SLOW_RANK} (" in slow_rank_run.output, slow_rank_run.explain()


def test_the_slowed_rank_is_a_straggler_alert_at_the_webhook_naming_it_and_its_host_then_resolved(slow_rank_run,
                                                                                                   receiver):
    """Slowest at 1.2x the median or more on most of the last 5 log steps: one ``straggler`` alert, naming the rank
    and the host its ranks were gathered from (the journal's rank_hosts); once the rank is slowed no more, one
    ``straggler_resolved``, and no other straggler in the balanced steps after it."""
    slow_rank_run.assert_trained(ITERATIONS)
    told = [body for body in receiver.bodies if body["kind"].startswith("straggler")]
    assert [body["kind"] for body in told] == ["straggler", "straggler_resolved"], (receiver.bodies, figures(slow_rank_run))
    alert, resolved = told
    named = f"rank {SLOW_RANK} ({socket.gethostname()})"
    assert alert["text"].startswith("[primus] ALERT straggler ") and alert["iteration"] <= SLOWED, alert
    assert f"{named} is the slowest at 1.2x the median busy time or more on " in alert["text"], alert
    assert "data wait: compute and the rest, not waiting for data" in alert["text"], alert  # it sleeps in forward
    assert f"{named} is no longer the slowest" in resolved["text"] and resolved["iteration"] > SLOWED, resolved
    assert f"{named} is the slowest" in slow_rank_run.output  # and the console
