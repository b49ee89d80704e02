"""A Grafana dashboard of the runs that push to a Pushgateway: loss, throughput, MFU, goodput, memory, stragglers,
the time since each run's last step, and its alerts, by run, chosen by experiment (``job``) and run. Import it in
Grafana (Dashboards, New, Import) and pick the Prometheus data source that scrapes the gateway."""

from __future__ import annotations

from typing import Any

from primus.tracking.health.detectors import loss_metrics
from primus.tracking.trackers import prometheus_names as names

UID = "primus-runs"
SCHEMA_VERSION = 39  # Grafana 10.4/11's dashboard model
WIDTH, HEIGHT = 12, 8  # each panel half the grid's 24 columns wide
SELECTED = '{job=~"$job", run=~"$run"}'
LEGEND = "{{run}} {{host}}"

# (title, unit, [(the run's metric, legend)]): a panel per figure the runs push (names.metric_name of each)
PANELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Loss", "none", tuple((key, LEGEND) for key in loss_metrics())),
    ("Throughput (tokens/s)", "short", (("perf/tokens_per_sec", LEGEND),)),
    ("Throughput per GPU (tokens/s)", "short", (("perf/tokens_per_sec_per_gpu", LEGEND),)),
    ("MFU", "percentunit", (("perf/mfu", LEGEND),)),
    ("Goodput (productive fraction of wall time)", "percentunit", (("goodput/productive_fraction", LEGEND),)),
    (
        "Memory (GiB)",
        "decgbytes",
        (
            ("mem/peak_allocated_gib", "peak allocated " + LEGEND),
            ("mem/reserved_gib", "reserved " + LEGEND),
            ("mem/host_rss_gib", "host RSS " + LEGEND),
        ),
    ),
    (
        "Stragglers: slowest rank's busy time over the median",
        "none",
        (("straggler/slowest_over_median", LEGEND),),
    ),
)


def dashboard() -> dict[str, Any]:
    """The dashboard model, as Grafana's import takes it."""
    panels = [
        _panel(title, unit, [(f"{names.metric_name(key)}{SELECTED}", legend) for key, legend in series])
        for title, unit, series in PANELS
    ]
    panels.append(_panel("Seconds since the last step", "s", [(f"time() - {names.LAST_STEP_TIME}{SELECTED}", LEGEND)]))
    panels.append(_panel("Alerts by run", "none", [(f"{names.ALERTS}{SELECTED}", "{{kind}} " + LEGEND)]))
    for i, panel in enumerate(panels):
        panel["id"] = i + 1
        panel["gridPos"] = {"h": HEIGHT, "w": WIDTH, "x": (i % 2) * WIDTH, "y": (i // 2) * HEIGHT}
    return {
        "uid": UID,
        "title": "Primus runs",
        "tags": ["primus"],
        "timezone": "browser",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [_datasource(), _label("job", names.STEP), _label("run", f'{names.STEP}{{job=~"$job"}}')]
        },
        "annotations": {"list": []},
        "panels": panels,
    }


def _panel(title: str, unit: str, queries: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "expr": expr,
                "legendFormat": legend,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
            }
            for i, (expr, legend) in enumerate(queries)
        ],
    }


def _datasource() -> dict[str, Any]:
    return {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}


def _label(name: str, series: str) -> dict[str, Any]:
    """A variable listing the values of label ``name`` on ``series``, any number of them chosen (all by default)."""
    return {
        "name": name,
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": f"label_values({series}, {name})", "refId": f"{name}-values"},
        "definition": f"label_values({series}, {name})",
        "refresh": 2,  # on the time range's change
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
    }
