"""OTLP requests built from opentelemetry-proto's messages, for the OTLP sink (``otlp.py``).

Built by hand, not through the OpenTelemetry SDK: its instruments stamp every point with the time it is
collected and keep only the last value per series, while a journal record carries the time upstream logged it and
a collector that was down must get every point it missed (docs/research/cluster-monitoring.md, section 4).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

from primus.tracking.journal.records import Alert

SCOPE = "primus"
ALERT_EVENT_NAME = "primus.alert"
STEP_ATTRIBUTE = "primus.step"


def _set(key_values: Any, attributes: Mapping[str, Any]) -> None:
    for key, value in attributes.items():
        kv: KeyValue = key_values.add()
        kv.key = key
        if isinstance(value, bool):
            kv.value.bool_value = value
        elif isinstance(value, int):
            kv.value.int_value = value
        elif isinstance(value, float):
            kv.value.double_value = value
        else:
            kv.value.string_value = str(value)


_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_./-]+")


def metric_name(key: str) -> str:
    """An OpenTelemetry instrument name for a journal key: ``lm loss`` -> ``primus.lm_loss``,
    ``throughput/tokens_per_s`` -> ``primus.throughput/tokens_per_s`` (spaces and the like are not allowed)."""
    return f"{SCOPE}.{_NOT_IN_A_NAME.sub('_', key)}"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def metrics_request(
    resource: Mapping[str, Any], points: Iterable[tuple[str, int, int, float]]
) -> ExportMetricsServiceRequest:
    """One gauge per name, its points ``(name, time_unix_nano, step, value)`` in the order given."""
    request = ExportMetricsServiceRequest()
    resource_metrics = request.resource_metrics.add()
    _set(resource_metrics.resource.attributes, resource)
    scope_metrics = resource_metrics.scope_metrics.add()
    scope_metrics.scope.name = SCOPE
    gauges: dict[str, Any] = {}
    for name, time_unix_nano, step, value in points:
        if name not in gauges:
            metric = scope_metrics.metrics.add()
            metric.name = name
            gauges[name] = metric.gauge
        point = gauges[name].data_points.add()
        point.time_unix_nano = time_unix_nano
        point.as_double = float(value)
        _set(point.attributes, {STEP_ATTRIBUTE: step})
    return request


def logs_request(
    resource: Mapping[str, Any], alerts: Iterable[Alert], observed_unix_nano: int, run_name: str
) -> ExportLogsServiceRequest:
    """Each alert as a WARN log record (event ``primus.alert``) at the time it was raised."""
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    _set(resource_logs.resource.attributes, resource)
    scope_logs = resource_logs.scope_logs.add()
    scope_logs.scope.name = SCOPE
    for alert in alerts:
        record = scope_logs.log_records.add()
        record.time_unix_nano = round(alert.time_s * 1000) * 1_000_000  # the journal keeps milliseconds
        record.observed_time_unix_nano = observed_unix_nano
        record.severity_number = SeverityNumber.SEVERITY_NUMBER_WARN
        record.severity_text = "WARN"
        record.event_name = ALERT_EVENT_NAME
        record.body.string_value = alert.console_line(run_name)
        _set(record.attributes, {"primus.alert.kind": str(alert.kind), STEP_ATTRIBUTE: alert.iteration})
    return request
