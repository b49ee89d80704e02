"""The cluster's own monitoring on real Megatron: two ranks under torchrun push to the session's real Pushgateway
(``--primus-prometheus-pushgateway``), and the session's real Prometheus scrapes it every second with the rules of
`primus monitoring rules --stall-after 8` loaded. The job is held at a gate after a few log steps (the writer waits
in a collective), its figures are read back from Prometheus's HTTP API with the run's labels, then every process of
it (the launcher, both ranks, the writer's delivery process) is SIGKILLed, as when its node dies: nothing of the job
is left to say so, and ``PrimusRunStalled`` fires in Prometheus within the stall time plus a few evaluations of the
last step's time. A run that ended normally before it (the tracking core's own, pushing FINISHED) fires nothing.
The dashboard's every panel queries a figure this run pushed."""

from __future__ import annotations

import re
import socket
import sys
import time
from datetime import datetime

import pytest
from megatron_runs import PRETRAIN_GPT, TINY_GPT_ARGS
from megatron_tracking_runs import toggles
from support.launch import kill_torchrun, start, torchrun_workers
from support.prometheus_servers import INTERVAL_S, STALL_AFTER_S
from support.slow_rank import held_rank_env
from support.timing import wait_for

from primus.monitoring.dashboard import dashboard
from primus.tracking import PrometheusConfig, TrackingConfig, start_run

pytestmark = pytest.mark.slow

EXPERIMENT, RUN = "prom-megatron", "prom-held"
LOGGED = 3  # log steps before the job is held (the non-writer rank waits before its next train step)
HELD_RANK = 0  # upstream's writer is the last rank
TRAIN_STEP = "megatron.training.training:train_step"
EVALUATIONS = 5  # Prometheus evaluates the rules every INTERVAL_S: it fires within this many of the threshold


def labels_of(series: dict) -> dict:
    return {k: v for k, v in series["metric"].items() if k != "__name__"}


def value_of(prometheus, expr: str) -> float | None:
    found = prometheus.query(expr)
    return float(found[0]["value"][1]) if found else None


def ended_normally(tmp_path, pushgateway) -> float:
    """A run that logs three steps and finishes; the time of its last step."""
    run = start_run(TrackingConfig(run_dir=tmp_path / "ended", experiment_name="prom-ended", run_name="ended",
                                   prometheus=PrometheusConfig(pushgateway.url), delivery="thread"))
    for step in (1, 2, 3):
        run.log(step, {"lm loss": 2.0 / step})
    last = time.time()
    run.finish()
    return last


@pytest.fixture(scope="module")
def killed_job(tmp_path_factory, prometheus, pushgateway, mlflow_server):
    """The held job's figures as Prometheus and the gateway had them, then the time its last step was logged, once
    every process of it was killed; and the normally ended run's last step time."""
    tmp_path = tmp_path_factory.mktemp("prom-megatron")
    ended_at = ended_normally(tmp_path, pushgateway)
    gate, log = tmp_path / "gate", tmp_path / "run.log"
    launcher = start([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                      str(PRETRAIN_GPT), *TINY_GPT_ARGS, "--train-iters", "20", *toggles(False, False, True),
                      "--mlflow-experiment-name", EXPERIMENT, "--mlflow-run-name", RUN,
                      "--mlflow-upload-performance-metrics", "--log-throughput", "--peak-tflops", "1",
                      "--primus-stragglers", "true", "--primus-prometheus-pushgateway", pushgateway.url,
                      "--primus-run-dir", str(tmp_path / "run")],
                     tmp_path, log, env={"MLFLOW_TRACKING_URI": mlflow_server.uri,
                                         **held_rank_env(gate, TRAIN_STEP, HELD_RANK, LOGGED + 1)})
    try:
        wait_for(lambda: (gate / "held").exists(), 240, f"rank {HELD_RANK} held after iteration {LOGGED}")
        selector = f'{{job="{EXPERIMENT}", run="{RUN}"}}'
        wait_for(lambda: value_of(prometheus, f"primus_step{selector}") == LOGGED, 60,
                 f"step {LOGGED} in Prometheus")
        seen = {name: prometheus.query(f"{name}{selector}")
                for name in ("primus_lm_loss", "primus_last_step_timestamp_seconds", "primus_run_status")}
        pushed = set(pushgateway.group(job=EXPERIMENT, run=RUN)["metrics"])
        workers = torchrun_workers(launcher.pid)
        assert sorted(workers) == [0, 1], workers
    finally:
        kill_torchrun(launcher)  # SIGKILL: the ranks, their delivery process, the launcher
    killed_at = time.time()
    return {"seen": seen, "pushed": pushed, "killed_at": killed_at, "ended_at": ended_at, "log": log}


def test_prometheus_has_the_runs_figures_with_its_labels(killed_job):
    seen = killed_job["seen"]
    want = {"job": EXPERIMENT, "run": RUN, "backend": "megatron", "host": socket.gethostname()}
    [loss], [heartbeat], [status] = seen["primus_lm_loss"], seen["primus_last_step_timestamp_seconds"], \
        seen["primus_run_status"]
    assert labels_of(loss) == labels_of(heartbeat) == want, killed_job["log"].read_text()[-3000:]
    assert labels_of(status) == want | {"status": "RUNNING"}
    losses = [float(m) for m in re.findall(r"lm loss: ([0-9.E+-]+)", killed_job["log"].read_text())]
    assert float(loss["value"][1]) == pytest.approx(losses[LOGGED - 1], rel=1e-5)  # upstream's, at the last step
    assert killed_job["ended_at"] < float(heartbeat["value"][1]) < killed_job["killed_at"]


def test_a_job_killed_with_its_node_fires_the_stall_rule_and_one_that_ended_fires_nothing(killed_job, prometheus):
    [heartbeat] = killed_job["seen"]["primus_last_step_timestamp_seconds"]
    last_step = float(heartbeat["value"][1])
    bound = last_step + STALL_AFTER_S + EVALUATIONS * INTERVAL_S
    wait_for(lambda: prometheus.alerts("PrimusRunStalled", job=EXPERIMENT, run=RUN), bound - time.time() + 1,
             "PrimusRunStalled for the killed job")
    [alert] = prometheus.alerts("PrimusRunStalled", job=EXPERIMENT, run=RUN)
    assert alert["state"] == "firing" and alert["labels"]["host"] == socket.gethostname()
    active = datetime.fromisoformat(alert["activeAt"]).timestamp()
    assert last_step + STALL_AFTER_S <= active <= bound, (last_step, active)
    assert f"run {RUN} (experiment {EXPERIMENT}) on {socket.gethostname()}" in alert["annotations"]["summary"]
    assert time.time() - killed_job["ended_at"] > STALL_AFTER_S + 2 * INTERVAL_S  # the ended run is as silent
    assert [a for a in prometheus.query('ALERTS{job="prom-ended"}')] == []


def test_every_dashboard_panel_queries_a_figure_the_run_pushed(killed_job):
    model = dashboard()
    assert {"uid", "title", "schemaVersion", "panels", "templating", "time"} <= model.keys()
    for panel in model["panels"]:
        assert {"id", "type", "title", "gridPos", "datasource", "targets"} <= panel.keys()
        named = {n for t in panel["targets"] for n in re.findall(r"primus_\w+", t["expr"])}
        assert named & killed_job["pushed"], (panel["title"], named, sorted(killed_job["pushed"]))
