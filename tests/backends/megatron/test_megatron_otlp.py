"""OpenTelemetry on a real two-rank Megatron run (the shared dp2_all run, megatron_tracking_runs.OTLP_RUN): an OTLP
endpoint of this process (tests/support/otlp_receiver.py, decoding with opentelemetry-proto) that refused the run's
first requests ends up holding every figure of the run's journal, each once, as a gauge at the time upstream logged
it, the missed ones included; the headers' secret reached the endpoint and nothing else (no file of the run, no
console, no rank's log)."""

from __future__ import annotations

import pytest
from megatron_tracking_runs import OTLP_REFUSED, OTLP_RUN, OTLP_SECRET, RUNS, otlp_receiver, result
from support.journal_files import run_dirs_under

from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import METRICS, SinkName
from primus.tracking.trackers.otlp_protobuf import is_number, metric_name

pytestmark = pytest.mark.slow


def test_every_figure_arrives_at_its_logged_time_after_an_outage_and_the_secret_stays_a_header(
    megatron_run, mlflow_server
):
    run = result(megatron_run, mlflow_server.uri, OTLP_RUN)
    assert run.returncode == 0, run.explain()
    [run_dir] = run_dirs_under(run.log_path.parent)
    receiver = otlp_receiver()
    journal = {
        (metric_name(key), r.step, r.ts_ms * 1_000_000, float(value))
        for r in read_all(run_dir)
        if r.kind == METRICS and r.is_for(SinkName.OTLP)
        for key, value in r.data.items()
        if is_number(value)
    }
    points = receiver.points()
    received = [(p.name, p.attributes["primus.step"], p.time_unix_nano, p.value) for p in points]
    assert receiver.received.refused == OTLP_REFUSED  # the outage happened, and ended
    assert len(received) == len(set(received)) and set(received) == journal  # each figure once, at its own time
    names = {name for name, *_ in received}
    assert {"primus.lm_loss", "primus.perf/tokens_per_sec", "primus.mem/host_rss_gib/max"} <= names, names
    [resource] = {tuple(sorted(p.resource.items())) for p in points}
    assert dict(resource) == {
        "service.name": "primus",
        "primus.run": dict(resource)["primus.run"],
        "primus.experiment": RUNS[OTLP_RUN].experiment,
        "primus.backend": "megatron",
        "host.name": dict(resource)["host.name"],
    }
    assert {h["authorization"] for h in receiver.received.headers} == {f"Bearer {OTLP_SECRET}"}
    assert OTLP_SECRET not in run.output
    for path in run.log_path.parent.rglob("*"):  # the run directory, W&B's files, every rank's log
        assert not path.is_file() or OTLP_SECRET.encode() not in path.read_bytes(), path
