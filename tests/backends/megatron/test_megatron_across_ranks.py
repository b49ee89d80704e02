"""Memory and utilisation over ranks (mlflow_performance_metrics_across_ranks), on a real 2-process Megatron
run on CPU (gloo; the shared dp2_all run of test_tracking_toggles): MLflow, read back from the server, holds
min/mean/max of every rank's reading at the previous log step beside the writer rank's own, and they agree with it."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import PERF_STEPS, RUNS, SYSTEM, mlflow_runs, result
from support.readers import mlflow_history

pytestmark = pytest.mark.slow


def test_min_mean_max_over_two_ranks_agree_with_the_writers_own_reading(megatron_run, mlflow_server, mlflow_client):
    run = result(megatron_run, mlflow_server.uri, "dp2_all")
    assert run.returncode == 0, run.explain()
    [mlflow_run] = mlflow_runs(mlflow_client, RUNS["dp2_all"].experiment)
    history = {key: dict(mlflow_history(mlflow_client, mlflow_run.info.run_id, key)) for key in mlflow_run.data.metrics}
    for name in SYSTEM:
        for step in PERF_STEPS:
            low, mean, high = (history[f"{name}/{stat}"][step] for stat in ("min", "mean", "max"))
            # two ranks: the mean is the midpoint (MLflow keeps float64)
            assert mean == pytest.approx((low + high) / 2, rel=1e-12), (name, step)
        for before, step in zip(PERF_STEPS, PERF_STEPS[1:]):
            # a log step's figures over ranks are the previous log step's: the writer's reading then is one end
            own, low, high = history[name][before], history[f"{name}/min"][step], history[f"{name}/max"][step]
            assert own in (low, high), (name, step, own, low, high)
    # the two processes' resident memory differs: the figures come from two ranks, not one reading twice
    assert any(history["mem/host_rss_gib/min"][s] < history["mem/host_rss_gib/max"][s] for s in PERF_STEPS)
