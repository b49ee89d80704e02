"""The slowest rank named (primus_stragglers, on by default) on a real 4-process Megatron run on CPU (gloo), two
simulated nodes of two ranks (support/two_nodes.py: each rank's row reaches the job's store through its node's
local rank 0), each node under ``primus-run torchrun``: a user's own ``sitecustomize``, chained by ``primus-run``,
makes rank 0 (node 0's first) sleep before each of upstream's forward steps of its first 8 iterations; the writer
rank (the last, node 1's second) logs straggler/* to TensorBoard (one log step later), read back from its
event files, and names rank 0 on the console; the delivery process's health watch posts a ``straggler`` alert to a
webhook, and ``straggler_resolved`` in the 8 balanced iterations after them. Rank 0 is not the writer, so the
writer's own tracking work cannot be what makes a rank the slowest. At ``--timing-log-level 2`` upstream times each
rank's batch reads: the slowed rank's is logged, and the alert says its lead is not data wait. No rank calls a
collective of Primus's (the figures go through the job's store)."""

from __future__ import annotations

import shutil
import socket
import statistics
import sys
import time
from pathlib import Path

import pytest
from megatron_runs import PRETRAIN_GPT, TINY_GPT_ARGS, MegatronRun
from megatron_tracking_runs import toggles
from support.host_reads import host_reads, host_reads_env
from support.readers import read_tb_scalars
from support.slow_rank import slow_rank_env
from support.two_nodes import run_two_nodes
from support.webhook_server import Receiver

from primus.tracking.health.webhook import WEBHOOK_ENV
from primus.tracking.measure import stragglers as straggler

pytestmark = pytest.mark.slow

ITERATIONS = 16
SLOWED = 8  # iterations 1-8 slowed (one forward step each: 8 samples over 4 ranks), 9-16 not: a straggler, then none
SLOW_RANK = 0
SLEEP_S = 1.0  # before each forward step: a lead of ~1 s, four times the alert's floor
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

    def command(launch: list[str]) -> list[str]:
        return [primus_run, sys.executable, "-m", "torch.distributed.run", *launch, str(PRETRAIN_GPT), *TINY_GPT_ARGS,
                "--train-iters", str(ITERATIONS), *toggles(True, False, False), "--tensorboard-dir", "tb",
                "--timing-log-level", "2"]  # stragglers by default

    env = {**slow_rank_env(folder / "site", FORWARD_STEP, SLOW_RANK, SLEEP_S, SLOWED), WEBHOOK_ENV: receiver.url}
    started = time.monotonic()
    # the writer's node's output is the run's (upstream prints its iterations on the last rank)
    code = run_two_nodes(command, folder, [folder / "node0.log", folder / "run.log"], env | host_reads_env(env), 300)
    return MegatronRun(code, folder / "run.log", time.monotonic() - started)


def figures(run: MegatronRun) -> dict[str, dict[int, float]]:
    """The run's TensorBoard scalars, {tag: {step: value}}."""
    [logdir] = {p.parent for p in (run.log_path.parent / "tb").rglob("events.out.tfevents.*")}
    return {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}


def test_the_slowed_rank_is_named_on_most_log_steps(slow_rank_run):
    slow_rank_run.assert_trained(ITERATIONS)
    scalars = figures(slow_rank_run)
    # the first log step only starts the clock; a log step's figures are logged at the next one
    logged = list(range(3, ITERATIONS + 1))
    assert all(scalars[straggler.MISSING_RANKS][s] == 0 for s in logged), scalars[straggler.MISSING_RANKS]
    for name in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX, straggler.SLOWEST_RANK,
                 straggler.SLOWEST_OVER_MEDIAN, straggler.SLOWEST_DATA_WAIT):
        assert sorted(scalars[name]) == logged, (name, scalars.get(name))
    slowed = logged[: SLOWED - 1]  # the figures of iterations 2-8, logged at 3-9
    named = [step for step in slowed if scalars[straggler.SLOWEST_RANK][step] == SLOW_RANK]
    assert len(named) > len(slowed) / 2, scalars[straggler.SLOWEST_RANK]
    # one micro-batch per rank and step, 1 s of sleep before it: most of it shows as the slow rank's lead,
    # typically (the other rank may be busy with its own work, e.g. the writer's, or lose the CPU to a neighbour)
    lead = {s: scalars[straggler.BUSY_MAX][s] - scalars[straggler.BUSY_MIN][s] for s in named}
    assert statistics.median(lead.values()) >= 0.15, lead
    low, median, high = (scalars[n] for n in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX))
    assert all(low[s] <= median[s] <= high[s] for s in logged)
    assert f"[primus] slowest rank {SLOW_RANK} (" in slow_rank_run.output, slow_rank_run.explain()


def test_the_slowed_rank_is_a_straggler_alert_at_the_webhook_naming_it_and_its_host_then_resolved(slow_rank_run,
                                                                                                   receiver):
    """Slowest at 1.2x the median or more on most of the last 5 log steps: one ``straggler`` alert, naming the rank
    and the host its figures came from (the journal's rank_hosts); once the rank is slowed no more, one
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


def test_no_collective_of_ours_on_any_rank(slow_rank_run):
    trainers = [r for r in host_reads(slow_rank_run.log_path.parent) if r["rank"] is not None]
    assert len(trainers) == 4 and all(r["collectives"] == [] for r in trainers), trainers
