"""The slowest rank named (primus_stragglers, on by default) on a real 2-process Megatron run on CPU (gloo): a
user's own ``sitecustomize``, chained by ``primus-run``, makes rank 0 sleep before each of upstream's forward steps; the
writer rank (the last) logs straggler/* to TensorBoard, read back from its event files, and names rank 0 on the
console. Rank 0 is not the writer, so the writer's own tracking work cannot be what makes a rank the slowest."""

from __future__ import annotations

import shutil
import statistics
import sys
from pathlib import Path

import pytest
from megatron_runs import PRETRAIN_GPT, TINY_GPT_ARGS, MegatronRun
from megatron_tracking_runs import toggles
from support.host_reads import host_reads, host_reads_env
from support.launch import start, wait_or_kill
from support.readers import read_tb_scalars
from support.slow_rank import slow_rank_env

from primus.tracking.measure import stragglers as straggler

pytestmark = pytest.mark.slow

ITERATIONS = 6
SLOW_RANK = 0
FORWARD_STEP = "megatron.core.pipeline_parallel.schedules:forward_step"


@pytest.fixture(scope="module")
def slow_rank_run(tmp_path_factory) -> MegatronRun:
    folder = tmp_path_factory.mktemp("stragglers")
    primus_run = shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run"))
    command = [primus_run, sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               str(PRETRAIN_GPT), *TINY_GPT_ARGS, "--train-iters", str(ITERATIONS), *toggles(True, False, False),
               "--tensorboard-dir", "tb"]  # stragglers by default
    env = slow_rank_env(folder / "site", FORWARD_STEP, SLOW_RANK, 0.15)
    process = start(command, folder, folder / "run.log", env | host_reads_env(env))
    return MegatronRun(wait_or_kill(process, 300), folder / "run.log", 0)


def test_the_slowed_rank_is_named_on_most_log_steps(slow_rank_run):
    slow_rank_run.assert_trained(ITERATIONS)
    [logdir] = {p.parent for p in (slow_rank_run.log_path.parent / "tb").rglob("events.out.tfevents.*")}
    scalars = {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}
    # the first log step only starts the clock; a log step's figures are logged at the next one
    logged = list(range(3, ITERATIONS + 1))
    assert all(scalars[straggler.MISSING_RANKS][s] == 0 for s in logged), scalars[straggler.MISSING_RANKS]
    for name in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX, straggler.SLOWEST_RANK,
                 straggler.SLOWEST_OVER_MEDIAN):
        assert sorted(scalars[name]) == logged, (name, scalars.get(name))
    named = [step for step in logged if scalars[straggler.SLOWEST_RANK][step] == SLOW_RANK]
    assert len(named) > len(logged) / 2, scalars[straggler.SLOWEST_RANK]
    # two micro-batches per rank and step, 0.15 s of sleep each: most of the 0.3 s shows as the slow rank's lead,
    # typically (the other rank may be busy with its own work, e.g. the writer's, or lose the CPU to a neighbour)
    lead = {s: scalars[straggler.BUSY_MAX][s] - scalars[straggler.BUSY_MIN][s] for s in named}
    assert statistics.median(lead.values()) >= 0.15, lead
    low, median, high = (scalars[n] for n in (straggler.BUSY_MIN, straggler.BUSY_MEDIAN, straggler.BUSY_MAX))
    assert all(low[s] <= median[s] <= high[s] for s in logged)
    assert f"[primus] slowest rank {SLOW_RANK} (" in slow_rank_run.output, slow_rank_run.explain()


def test_no_collective_of_ours_on_any_rank(slow_rank_run):
    trainers = [r for r in host_reads(slow_rank_run.log_path.parent) if r["rank"] is not None]
    assert len(trainers) == 2 and all(r["collectives"] == [] for r in trainers), trainers
