"""The OTLP sink against a real OTLP/HTTP endpoint (tests/support/otlp_receiver.py, which decodes with
opentelemetry-proto): a run's figures arrive as gauges at the times they were logged, its alerts as log records;
a collector that refused for a while gets the points it missed with their own times; ``primus tracking sync``
delivers a run whose delivery died; points past ``max_age_s`` are left out; the headers secret is sent as a
header and written nowhere. The same on a real Megatron training: tests/backends/megatron/test_megatron_otlp.py."""

from __future__ import annotations

import logging
import time

import pytest
from support.otlp_receiver import OtlpReceiver

from primus.redaction import MASK, is_secret_key, redact_text
from primus.tracking import TrackingConfig, TrackingConfigError, start_run
from primus.tracking.delivery.replay import sync_run
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import EVENT, METRICS, Alert, AlertKind, encode
from primus.tracking.journal.writer import JournalWriter
from primus.tracking.settings import otlp_env
from primus.tracking.settings.config import OtlpConfig
from primus.tracking.tags.meta import RunMeta

SECRET = "otlp-s3cr3t-header-value"
HEADERS = f"authorization=Bearer%20{SECRET},x-tenant=team%2Da"


@pytest.fixture
def receiver(monkeypatch):
    with OtlpReceiver() as rx:
        monkeypatch.setenv(otlp_env.ENDPOINT, rx.url)
        monkeypatch.setenv(otlp_env.HEADERS, HEADERS)
        yield rx


def journal_times(run_dir, name: str) -> dict[int, int]:
    """{step: time_unix_nano} of ``name`` as the journal holds it."""
    return {r.step: r.ts_ms * 1_000_000 for r in read_all(run_dir) if r.kind == METRICS and name in r.data}


def received_times(rx: OtlpReceiver, name: str) -> dict[int, int]:
    return {p.attributes["primus.step"]: p.time_unix_nano for p in rx.points(name)}


def run_steps(tmp_path, steps, *alerts: Alert):
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="otlp-e", delivery="thread"))
    for step in steps:
        run.log(step, {"lm loss": 2.0 - step / 10, "throughput/tokens_per_s": 1000.0 + step})
        time.sleep(0.002)  # distinct milliseconds: each point's own time is checked
    for alert in alerts:
        run.alert(alert)
    assert run.flush(60)
    run.finish()
    return run


def test_figures_arrive_as_gauges_at_their_logged_times_and_alerts_as_log_records(tmp_path, receiver):
    alert = Alert(AlertKind.NAN, 4, "lm loss is nan at iteration 4", time.time())
    run_steps(tmp_path, range(5), alert)
    run_dir = tmp_path / "run"
    assert receiver.names() >= {"primus.lm_loss", "primus.throughput/tokens_per_s"}
    loss = receiver.points("primus.lm_loss")
    assert sorted(p.value for p in loss) == sorted(2.0 - s / 10 for s in range(5))
    assert received_times(receiver, "primus.lm_loss") == journal_times(run_dir, "lm loss")
    assert (
        loss[0].resource
        == {
            "service.name": "primus",
            "primus.run": "run",
            "primus.experiment": "otlp-e",
            "primus.backend": "",
            "host.name": loss[0].resource["host.name"],
        }
        and loss[0].resource["host.name"]
    )
    assert {h["authorization"] for h in receiver.received.headers} == {f"Bearer {SECRET}"}
    assert {h["x-tenant"] for h in receiver.received.headers} == {"team-a"}
    [log] = receiver.logs()
    [raised_ms] = [r.ts_ms for r in read_all(run_dir) if r.kind == EVENT and r.data.get("event") == "alert"]
    assert (log.event_name, log.severity_text, log.time_unix_nano) == ("primus.alert", "WARN", raised_ms * 1_000_000)
    assert log.attributes == {"primus.alert.kind": "nan", "primus.step": 4}
    assert "lm loss is nan at iteration 4" in log.body
    for path in run_dir.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


def test_a_collector_that_refused_gets_the_missed_points_with_their_own_times(tmp_path, receiver):
    receiver.refuse_requests(2)  # the worker backs off 0.5 s, then 1 s
    run_steps(tmp_path, range(8))
    assert receiver.received.refused == 2
    assert received_times(receiver, "primus.lm_loss") == journal_times(tmp_path / "run", "lm loss")
    assert len(receiver.points("primus.lm_loss")) == 8  # each once


def test_gzip_when_the_variable_asks_for_it(tmp_path, receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "GZIP")
    run_steps(tmp_path, range(3))
    assert {h.get("content-encoding") for h in receiver.received.headers} == {"gzip"}
    assert received_times(receiver, "primus.lm_loss") == journal_times(tmp_path / "run", "lm loss")


def test_sync_delivers_a_run_whose_delivery_died(tmp_path, receiver):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    otlp = TrackingConfig(run_dir=run_dir).resolve().otlp
    RunMeta(run_name="r", experiment_name="e", otlp=vars(otlp)).save(run_dir)
    writer = JournalWriter(run_dir)
    now_ms = int(time.time() * 1000)
    for step in range(6):
        writer.append([encode(METRICS, step, now_ms - 60_000 + step, {"lm loss": step / 4})])
    writer.close()
    report = sync_run(run_dir, timeout_s=30)
    assert report.delivered == {"otlp": True}
    assert received_times(receiver, "primus.lm_loss") == {s: (now_ms - 60_000 + s) * 1_000_000 for s in range(6)}
    assert sync_run(run_dir, timeout_s=30).delivered == {}  # delivered: nothing more to send


def test_points_older_than_the_documented_age_are_left_out_said_once(tmp_path, receiver, caplog):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    otlp = OtlpConfig(max_age_s=3600)
    RunMeta(run_name="r", experiment_name="e", otlp=vars(TrackingConfig(run_dir, otlp=otlp).resolve().otlp)).save(
        run_dir
    )
    writer = JournalWriter(run_dir)
    now_ms = int(time.time() * 1000)
    for step, age_s in enumerate((7200, 7100, 60, 1)):
        writer.append([encode(METRICS, step, now_ms - age_s * 1000, {"lm loss": 1.0})])
    writer.close()
    with caplog.at_level(logging.WARNING, "primus.tracking"):
        assert sync_run(run_dir, timeout_s=30).delivered == {"otlp": True}
    assert sorted(received_times(receiver, "primus.lm_loss")) == [2, 3]
    assert [r.getMessage() for r in caplog.records if "max_age_s" in r.getMessage()] == [
        "primus tracking: OTLP: points older than 3600 s left out (otlp.max_age_s)"
    ]


def test_the_standard_variables_name_the_endpoints_as_the_sdk_reads_them():
    env = {otlp_env.ENDPOINT: "http://collector:4318/"}
    assert otlp_env.endpoint(env, "metrics") == ("http://collector:4318/v1/metrics", otlp_env.ENDPOINT)
    own = {**env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://other/custom"}
    assert otlp_env.endpoint(own, "metrics") == ("http://other/custom", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    assert otlp_env.endpoint(own, "logs") == ("http://collector:4318/v1/logs", otlp_env.ENDPOINT)
    assert otlp_env.endpoint({}, "metrics") is None
    headers = {otlp_env.HEADERS: "Authorization=Bearer%20x, a=1,bad", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=2"}
    assert otlp_env.headers(headers, "metrics") == {"authorization": "Bearer x", "a": "1"}
    assert otlp_env.headers(headers, "logs") == {"b": "2"}


def test_the_sink_is_on_only_when_a_collector_is_named_and_a_bad_address_is_refused(tmp_path):
    assert TrackingConfig(tmp_path).resolve({}).otlp is None
    only_metrics = TrackingConfig(tmp_path).resolve({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:1/m"}).otlp
    assert (only_metrics.metrics_endpoint, only_metrics.logs_endpoint) == ("http://c:1/m", None)
    with pytest.raises(
        TrackingConfigError,
        match=r"OTEL_EXPORTER_OTLP_ENDPOINT='grpc://c:4317/v1/metrics' is not valid.*OTLP/HTTP address",
    ):
        TrackingConfig(tmp_path).resolve({otlp_env.ENDPOINT: "grpc://c:4317"})
    with pytest.raises(TrackingConfigError, match=r"OTEL_EXPORTER_OTLP_COMPRESSION='deflate' is not valid: use gzip"):
        TrackingConfig(tmp_path).resolve({otlp_env.ENDPOINT: "http://c:4318", otlp_env.COMPRESSION: "deflate"})
    with pytest.raises(TrackingConfigError, match=r"otlp.max_age_s=0"):
        TrackingConfig(tmp_path, otlp=OtlpConfig(max_age_s=0)).resolve({otlp_env.ENDPOINT: "http://c:4318"})


def test_the_headers_variables_are_secrets(monkeypatch):
    for name in (otlp_env.HEADERS, "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"):
        assert is_secret_key(name), name
    monkeypatch.setenv(otlp_env.HEADERS, HEADERS)
    assert redact_text(f"env: {HEADERS}") == f"env: {MASK}"
