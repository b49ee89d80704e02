"""A tracker added by another distribution, fed by a real Megatron training: the throwaway distribution's sink
(entry point primus.sinks, PRIMUS_SINKS=demo) gets every iteration's upstream scalars, with every built-in
tracker off, and the run's end. The tracking core's own tests (tests/tracking/test_plugin_sinks.py) cover the
replay after an outage; this one shows a backend starts tracking for a plugin alone and feeds it the same
values its TensorBoard writer would get."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import toggles
from support.plugin_dists import SINK_NAME, install_sink_plugin, read_sink_record

from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import METRICS

pytestmark = pytest.mark.slow


def test_a_plugin_tracker_alone_gets_every_iteration_of_a_real_training(megatron_run, tmp_path):
    site = install_sink_plugin(tmp_path / "site")
    run_dir = tmp_path / "run"
    run = megatron_run("plugin_sink", *toggles(tensorboard=False, wandb=False, mlflow=False),
                       "--primus-run-dir", str(run_dir), env={"PYTHONPATH": str(site), "PRIMUS_SINKS": "demo"})
    losses = run.assert_trained()
    opened, *metrics, closed = read_sink_record(run_dir)
    assert opened["params"] > 100  # Megatron's arguments, redacted
    # every record the hub journaled for all trackers (what TensorBoard's writer would get), and those for it by name
    # (upstream's One-Logger figures, journaled for each tracker on)
    journaled = list(read_all(run_dir))
    assert [(m["step"], m["metrics"]) for m in metrics] == [
        (r.step, r.data) for r in journaled if r.kind == METRICS and (r.only is None or SINK_NAME in r.only)
    ], run.explain()
    upstream = [m for m in metrics if "lm loss" in m["metrics"]]
    assert [m["step"] for m in upstream] == [1, 2, 3], run.explain()
    assert all({"learning-rate", "grad-norm"} <= set(m["metrics"]) for m in upstream)
    # the step's own loss, as upstream's writer gets it; its console line prints a running average
    assert [m["metrics"]["lm loss"] for m in upstream] == pytest.approx(losses, rel=1e-2)
    assert closed == {"status": "FINISHED", "complete": True}
