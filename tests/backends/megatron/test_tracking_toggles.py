"""Every combination of the three tracker toggles on upstream Megatron (1 process; 2 processes for
DP=2 and PP=2): each enabled sink — TensorBoard events, the W&B offline run file, the MLflow server —
holds every expected tag at every logged iteration, from one writer rank; each disabled sink holds and
wrote nothing. The remaining combination (TensorBoard + MLflow) is `primus train`'s tiny_cpu.yaml
(test_tracking_primus_train.py), W&B + MLflow is the resumed run (test_tracking_resume.py).
Tracking never changes training: the same losses and norms with every tracker on as with all off."""

from __future__ import annotations

import re

import pytest
from megatron_tracking_runs import PERF_STEPS, RUNS, STEPS, assert_sinks, mlflow_runs, result, start
from support.recent_goodput import assert_recent_goodput_in_mlflow

pytestmark = pytest.mark.slow

COMBINATIONS = ("none", "all", "tb", "wandb", "mlflow", "tb_wandb", "dp2_all", "pp2_wandb")
_CONSOLE = re.compile(r"iteration\s+(\d+)/.*?lm loss: (\S+) \|.*?grad norm: (\S+) \|.*?params norm: (\S+) \|")


@pytest.fixture(scope="module")
def run_of(megatron_run, mlflow_server):
    start(megatron_run, mlflow_server.uri, *COMBINATIONS)
    return lambda name: result(megatron_run, mlflow_server.uri, name)


@pytest.mark.parametrize("name", COMBINATIONS)
def test_enabled_sinks_hold_every_tag_and_disabled_ones_nothing(run_of, name, mlflow_client):
    run = run_of(name)
    assert run.returncode == 0, run.explain()  # the steps each sink holds show how far it trained
    assert_sinks(run, RUNS[name], mlflow_client)


def test_tracking_never_changes_training(run_of):
    """Losses, gradient norms and parameter norms per iteration, as upstream prints them, with every
    tracker on and with every tracker off."""
    on, off = run_of("all"), run_of("none")
    on.assert_trained()
    off.assert_trained()
    per_iteration = _CONSOLE.findall(off.output)
    assert [int(i) for i, *_ in per_iteration] == [1, 2, 3], off.explain()
    assert _CONSOLE.findall(on.output) == per_iteration


@pytest.mark.parametrize("name", ["all", "dp2_all"])
def test_recent_goodput_and_slow_steps_read_back_from_mlflow(run_of, name, mlflow_client):
    """Each window's goodput at every log step, the step time's deviation from the second (the first log step's
    interval is start-up), the slow steps' running total."""
    assert run_of(name).returncode == 0
    [run] = mlflow_runs(mlflow_client, RUNS[name].experiment)
    assert_recent_goodput_in_mlflow(mlflow_client, run.info.run_id, STEPS, PERF_STEPS)
