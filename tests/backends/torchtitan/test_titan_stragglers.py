"""The slowest rank named (primus_stragglers) on real TorchTitan: two FSDP ranks on gloo under ``primus-run torchrun
-m torchtitan.train`` (the user's own upstream command), a user's own ``sitecustomize`` chained by primus-run making
rank 1 sleep before each of upstream's forward-backward steps. Rank 0 (upstream's metrics rank) logs straggler/* to
TensorBoard, read back from its event files, and names rank 1 on the console. FSDP waits inside the forward and the
backward (its all-gathers and reduce-scatters): the waiting rank's waits there are not busy time. Upstream times each
rank's data loading: the slow rank's part of it is logged, and the straggler alert says its time is not data wait."""

from __future__ import annotations

import statistics

import pytest
from support.readers import read_tb_scalars
from support.slow_rank import slow_rank_env

from primus.tracking.measure.stragglers import (
    BUSY_MAX,
    BUSY_MEDIAN,
    BUSY_MIN,
    SLOWEST_DATA_WAIT,
    SLOWEST_OVER_MEDIAN,
    SLOWEST_RANK,
)

pytestmark = pytest.mark.slow

STEPS = 6
SLOW_RANK = 1
SLEEP_S = 2.5  # per step, against steps of ~1-4 s on a loaded 2-core host: 1.2x the median (the alert's bar) and more
FORWARD_BACKWARD = "torchtitan.trainer:Trainer.forward_backward_step"


@pytest.fixture(scope="module")
def slow_rank_run(titan_run, tmp_path_factory):
    site = tmp_path_factory.mktemp("users-site")
    return titan_run("stragglers", "--training.steps", str(STEPS), "--parallelism.data-parallel-shard-degree", "2",
                     "--metrics.enable-tensorboard", "--metrics.primus-stragglers", "True", nproc=2,
                     launcher="primus-run", env=slow_rank_env(site, FORWARD_BACKWARD, SLOW_RANK, SLEEP_S))


def test_the_slowed_rank_is_named_on_most_log_steps(slow_rank_run):
    assert slow_rank_run.returncode == 0, slow_rank_run.explain()
    [logdir] = sorted({p.parent for p in slow_rank_run.dump.rglob("events.out.tfevents.*")})
    scalars = {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}
    logged = list(range(2, STEPS + 1))  # the first log step only starts the clock
    for name in (BUSY_MIN, BUSY_MEDIAN, BUSY_MAX, SLOWEST_RANK, SLOWEST_OVER_MEDIAN, SLOWEST_DATA_WAIT):
        assert sorted(scalars.get(name, {})) == logged, (name, scalars.get(name), slow_rank_run.explain())
    named = [step for step in logged if scalars[SLOWEST_RANK][step] == SLOW_RANK]
    assert len(named) > len(logged) / 2, scalars[SLOWEST_RANK]
    # the sleep shows as the slow rank's lead over the other, typically (one log step's lead can shrink when the
    # other rank loses the CPU to a neighbour on a shared host: wall time)
    lead = {s: scalars[BUSY_MAX][s] - scalars[BUSY_MIN][s] for s in named}
    assert statistics.median(lead.values()) >= SLEEP_S / 2, lead
    assert f"[primus] slowest rank {SLOW_RANK} (" in slow_rank_run.output, slow_rank_run.explain()


def test_the_straggler_alert_names_the_slowed_rank_and_says_its_time_is_not_data_wait(slow_rank_run):
    """It sleeps in the forward-backward step, not in upstream's data loading, which its data wait shows."""
    assert slow_rank_run.returncode == 0, slow_rank_run.explain()
    [alert] = [line for line in slow_rank_run.output.splitlines() if "[primus] ALERT straggler " in line]
    assert f"rank {SLOW_RANK} (" in alert and "compute and the rest, not waiting for data" in alert, alert
