"""The Prometheus sink: names by Prometheus's rules, the figures a push carries, its settings, and runs of the
tracking core pushing to the session's real Pushgateway (``pushgateway`` fixture), read back from its API: the
latest figures and the run's status, pushes paced, and a gateway that was down brought up to date once it answers;
and the /metrics a node's delivery process serves for a Prometheus that scrapes."""

from __future__ import annotations

import math
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.mlflow_server import free_port
from support.prometheus_servers import Pushgateway
from support.timing import wait_for

from primus.tracking import PrometheusConfig, TrackingConfig, TrackingConfigError, start_run
from primus.tracking.journal.records import EVENT, METRICS, Alert, AlertKind, Record
from primus.tracking.journal.run_state import RunState
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.prometheus import Figures, PrometheusSink
from primus.tracking.trackers.prometheus_names import metric_name
from primus.tracking.trackers.registry import build_sinks


@pytest.mark.parametrize(("key", "name"), [
    ("lm loss", "primus_lm_loss"),
    ("throughput/tokens_per_s", "primus_throughput_tokens_per_s"),
    ("memory/max_reserved(GiB)", "primus_memory_max_reserved_GiB"),
    ("mfu(%)", "primus_mfu"),
    ("time_metrics/end_to_end(s)", "primus_time_metrics_end_to_end_s"),
    ("a__b/_c", "primus_a_b_c"),
    ("9 lives", "primus_9_lives"),
    ("%", None),
])
def test_a_scalar_is_named_by_prometheus_rules(key, name):
    assert metric_name(key) == name


def record(kind: str, step: int, ts_ms: int, data: dict) -> Record:
    return Record(kind, step, ts_ms, data, end=0)


def alert(kind: str) -> Record:
    return record(EVENT, 0, 5, Alert(kind, 3, "text", 0.005).event(notified=False) | {"event": "alert"})


def test_figures_keep_the_latest_value_of_each_scalar_the_step_its_time_and_the_alerts_counted():
    before = Figures()
    after = before.folded([
        record(METRICS, 1, 1_000, {"lm loss": 2.5, "lr": 1e-3}),
        alert(AlertKind.NAN),
        record(METRICS, 2, 2_500, {"lm loss": math.nan, "note": "text", "step": 99}),
        alert(AlertKind.NAN),
        alert(AlertKind.STALLED),
    ])
    assert before == Figures()  # a failed push retries from the figures before it
    assert math.isnan(after.values["primus_lm_loss"])  # kept: PrimusLossNotFinite looks for it
    assert {k: v for k, v in after.values.items() if k != "primus_lm_loss"} == {"primus_lr": 1e-3}
    assert (after.step, after.step_time_s) == (2, 2.5)  # not the scalar "step": primus_step is the sink's own
    assert after.alerts == {"nan": 2, "stalled": 1}


def test_the_pushgateway_comes_from_the_option_or_the_variable_and_a_bad_one_is_refused_before_training(tmp_path):
    env = {"PRIMUS_PROMETHEUS_PUSHGATEWAY": "http://gw.example:9091/", "PRIMUS_PROMETHEUS_PUSH_INTERVAL": "2.5"}
    cfg = TrackingConfig(run_dir=tmp_path).resolve(env)
    assert cfg.prometheus == PrometheusConfig(pushgateway="http://gw.example:9091", push_interval_s=2.5)
    assert TrackingConfig(run_dir=tmp_path).resolve({}).prometheus is None
    given = TrackingConfig(run_dir=tmp_path, prometheus=PrometheusConfig("https://gw.example")).resolve({})
    assert given.prometheus == PrometheusConfig("https://gw.example", push_interval_s=1.0)
    with pytest.raises(TrackingConfigError, match=r"PRIMUS_PROMETHEUS_PUSHGATEWAY='gw:9091' is not valid: give the "
                                                  r"Pushgateway as http://HOST:PORT"):
        TrackingConfig(run_dir=tmp_path).resolve({"PRIMUS_PROMETHEUS_PUSHGATEWAY": "gw:9091"})
    with pytest.raises(TrackingConfigError, match=r"PRIMUS_PROMETHEUS_PUSH_INTERVAL='soon' is not valid"):
        TrackingConfig(run_dir=tmp_path).resolve({**env, "PRIMUS_PROMETHEUS_PUSH_INTERVAL": "soon"})
    with pytest.raises(TrackingConfigError, match=r"prometheus.push_interval_s=0 is not valid"):
        TrackingConfig(run_dir=tmp_path, prometheus=PrometheusConfig("http://gw:1", 0)).resolve({})


def gateway_config(tmp_path, url: str, interval_s: float, **kw) -> TrackingConfig:
    return TrackingConfig(run_dir=tmp_path / "run", experiment_name="prom-sink", run_name="r1", delivery="thread",
                          prometheus=PrometheusConfig(url, interval_s), tags={"primus.backend": "megatron"}, **kw)


class CountedPushes:
    """The sink's pushes, counted with the time each starts (the real push still goes out)."""

    def __init__(self, monkeypatch):
        self.times: list[float] = []
        real_open = PrometheusSink.open

        def open_(sink):
            target = real_open(sink)
            push = sink._push

            def counted(figures, status):
                self.times.append(time.monotonic())
                push(figures, status)

            sink._push = counted
            return target

        monkeypatch.setattr(PrometheusSink, "open", open_)


def test_a_run_pushes_its_latest_figures_paced_then_its_status(tmp_path, pushgateway, monkeypatch):
    pushes = CountedPushes(monkeypatch)
    run = start_run(gateway_config(tmp_path, pushgateway.url, 0.5))
    logged_at = {}
    for step in range(1, 31):
        logged_at[step] = time.time()
        run.log(step, {"lm loss": 3.0 - step / 100, "throughput/tokens_per_s": 100.0 * step})
        time.sleep(0.05)  # 20 steps a second: several per push
    run.alert(Alert(AlertKind.LOSS_SPIKE, 30, "loss spike", time.time()))
    wait_for(lambda: (g := pushgateway.group(job="prom-sink", run="r1")) is not None
             and g["metrics"]["primus_step"][0]["value"] == 30, 30, "step 30 in the gateway")
    running = pushgateway.group(job="prom-sink", run="r1")
    assert running["labels"] == {"job": "prom-sink", "run": "r1", "backend": "megatron", "host": socket.gethostname()}
    assert running["metrics"]["primus_run_status"] == [{"labels": running["labels"] | {"instance": "",
                                                                                       "status": "RUNNING"},
                                                        "value": 1.0}]
    # the worker starts deliveries 0.5 s apart at least; a push starts after its delivery read the journal (a few ms
    # at most, half the interval allowed), so over n of them, at least (n - 1) intervals (the run's end is not
    # held back: its last figures and status go at once)
    running = list(pushes.times)
    assert len(running) >= 3 and running[-1] - running[0] >= (len(running) - 1.5) * 0.5, running
    run.finish()
    group = pushgateway.group(job="prom-sink", run="r1")["metrics"]
    latest = {name: samples[0]["value"] for name, samples in group.items() if len(samples) == 1}
    assert latest["primus_lm_loss"] == 3.0 - 30 / 100 and latest["primus_throughput_tokens_per_s"] == 3000.0
    assert latest["primus_step"] == 30
    assert abs(latest["primus_last_step_timestamp_seconds"] - logged_at[30]) < 1.0  # when it was logged, not pushed
    assert [(s["labels"]["status"], s["value"]) for s in group["primus_run_status"]] == [("FINISHED", 1.0)]
    alerts = {s["labels"]["kind"]: s["value"] for s in group["primus_alerts_total"]}
    assert alerts["loss_spike"] == 1.0 and alerts["stalled"] == 0.0  # every kind there from the start


def test_a_gateway_that_was_down_gets_the_latest_figures_once_it_answers(tmp_path, primus_caplog):
    gateway = Pushgateway(tmp_path / "late-gateway")
    (tmp_path / "late-gateway").mkdir()
    run = start_run(gateway_config(tmp_path, gateway.url, 0.2, exit_deadline_s=60))
    try:
        for step in range(1, 4):
            run.log(step, {"lm loss": 1.0 / step})
        run.alert(Alert(AlertKind.NAN, 3, "lm loss is nan", time.time()))
        wait_for(lambda: "prometheus failed to deliver" in primus_caplog.text, 30, "the outage said")
        time.sleep(1.0)  # retries with back-off meanwhile: each folds the same records again
        gateway.start()
        wait_for(lambda: (g := gateway.group(run="r1")) is not None
                 and g["metrics"]["primus_step"][0]["value"] == 3, 30, "the latest step once the gateway answers")
        assert primus_caplog.text.count("prometheus failed to deliver") == 1  # said once, however many retries
        alerts = {s["labels"]["kind"]: s["value"] for s in gateway.group(run="r1")["metrics"]["primus_alerts_total"]}
        assert alerts["nan"] == 1.0  # counted once, not once per try
        run.finish()
        assert [s["labels"]["status"] for s in gateway.group(run="r1")["metrics"]["primus_run_status"]] == ["FINISHED"]
    finally:
        gateway.stop()


def scraped(port: int) -> dict[tuple[str, str], dict] | None:
    """{(run, name): sample labels and value} of what /metrics serves on ``port``; None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    return {(s.labels.get("run", ""), s.name): {**s.labels, "value": s.value}
            for family in text_string_to_metric_families(text) for s in family.samples
            if s.name.startswith("primus_") and s.name != "primus_alerts_total"}


def test_a_nodes_delivery_process_serves_metrics_for_every_run_it_delivers(tmp_path):
    """Two runs of one job on this node (a rank's own run each) share one delivery process: its one /metrics."""
    port = free_port()
    runs = [start_run(TrackingConfig(run_dir=tmp_path / name, experiment_name="prom-scrape", run_name=name,
                                     delivery_group=tmp_path / "job", prometheus=PrometheusConfig(port=port),
                                     tags={"primus.backend": "torchtitan", "primus.rank": str(rank)}))
            for rank, name in enumerate(("job-rank0", "job-rank1"))]
    try:
        for i, run in enumerate(runs):
            run.log(7, {"lm loss": 1.5 + i})
        wait_for(lambda: (m := scraped(port)) and {("job-rank0", "primus_step"), ("job-rank1", "primus_step")} <= m.keys(),
                 60, "both runs' step on /metrics")
        served = scraped(port)
        for i, name in enumerate(("job-rank0", "job-rank1")):
            assert served[(name, "primus_lm_loss")] == {"job": "prom-scrape", "run": name, "backend": "torchtitan",
                                                        "host": socket.gethostname(), "rank": str(i), "value": 1.5 + i}
            assert served[(name, "primus_step")]["value"] == 7
            assert served[(name, "primus_run_status")]["status"] == "RUNNING"
    finally:
        for run in runs:
            run.finish()


def test_a_port_that_is_not_a_port_is_refused_before_training(tmp_path):
    with pytest.raises(TrackingConfigError, match=r"PRIMUS_PROMETHEUS_PORT='http' is not valid: give a free TCP port"):
        TrackingConfig(run_dir=tmp_path).resolve({"PRIMUS_PROMETHEUS_PORT": "http"})
    assert TrackingConfig(run_dir=tmp_path).resolve({"PRIMUS_PROMETHEUS_PORT": "9464"}).prometheus.port == 9464


def test_a_delivery_process_started_again_goes_on_from_the_figures_saved_with_its_cursor(tmp_path, pushgateway):
    cfg = TrackingConfig(run_dir=tmp_path / "run", experiment_name="prom-restart", run_name="r",
                         prometheus=PrometheusConfig(pushgateway.url)).resolve({})
    cfg.run_dir.mkdir()

    def sink():
        [built] = build_sinks(["prometheus"], cfg, RunMeta.build(cfg), RunState(cfg.run_dir))
        built.open()
        return built

    first = sink()
    first.write([record(METRICS, 4, 4_000, {"lm loss": 0.5}), alert(AlertKind.NAN)])
    first.flush()  # what the worker does before it saves the cursor
    first.write([alert(AlertKind.NAN)])  # after the cursor: delivered again to the next process
    again = sink()
    assert again.figures == Figures({"primus_lm_loss": 0.5}, 4, 4.0, {"nan": 1})


def test_a_gateway_still_down_at_the_end_is_said_without_sending_anyone_to_sync(tmp_path, primus_caplog):
    run = start_run(gateway_config(tmp_path, f"http://127.0.0.1:{free_port()}", 0.2, exit_deadline_s=1))
    run.log(1, {"lm loss": 1.0})
    run.finish()
    assert "prometheus did not receive the run's last figures within exit_deadline_s=1" in primus_caplog.text
    assert "tracking sync" not in primus_caplog.text  # a gateway keeps no history to fill in later
