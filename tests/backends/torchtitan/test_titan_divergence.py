"""A diverging TorchTitan run (a huge learning rate, on 0.2.2): the NaN loss is told as a ``nan`` alert at its step on the
console and at the webhook, and carried by MLflow (tag) and W&B (``run.alert``, kept in the offline run file);
upstream trains on, so the run still ends FINISHED."""

from __future__ import annotations

import math

import pytest
from support.readers import mlflow_history, read_wandb_alerts
from titan_runs import STEPS, V0_2

from primus.tracking.health.webhook import WEBHOOK_ENV

pytestmark = pytest.mark.slow


def test_a_nan_loss_is_told_at_its_step_to_the_console_the_webhook_mlflow_and_wandb(titan_run, mlflow_uri,
                                                                                    mlflow_client, webhook_receiver):
    run = titan_run("diverges", "--optimizer.lr", "1e30", "--metrics.enable-mlflow", "--metrics.enable-wandb",
                    "--metrics.mlflow-experiment-name", "h28-titan-nan",
                    env={"MLFLOW_TRACKING_URI": mlflow_uri, WEBHOOK_ENV: webhook_receiver.url,
                         "WANDB_MODE": "offline", "WANDB_PROJECT": "h28-titan-nan"},
                    release=V0_2)  # 0.2.2 names the learning rate on the command line (0.3: in a param group)
    assert run.returncode == 0, run.explain()
    [mlrun] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("h28-titan-nan").experiment_id])
    losses = mlflow_history(mlflow_client, mlrun.info.run_id, "loss_metrics/global_avg_loss")
    assert len(losses) == STEPS and math.isfinite(losses[0][1]), losses
    first_nan = next(step for step, loss in losses if math.isnan(loss))
    said = f"iteration {first_nan}: loss_metrics/global_avg_loss is nan at iteration {first_nan}"
    assert "[primus] ALERT nan run " in run.output and said in run.output, run.explain()
    assert [(b["kind"], b["iteration"]) for b in webhook_receiver.bodies] == [("nan", first_nan)]
    assert mlrun.data.tags["primus.alert.nan"] == said
    assert [(title, text) for title, text, _ in read_wandb_alerts(run.dump)] == [("primus: nan", said)]
