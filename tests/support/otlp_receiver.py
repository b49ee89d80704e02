"""A real OTLP/HTTP (protobuf) endpoint on 127.0.0.1 for tests: what a collector would receive.

It decodes every POST to /v1/metrics, /v1/logs and /v1/traces (gzip bodies too, as the SDK's exporters send with
compression) with opentelemetry-proto's own messages and keeps what it got: metric points with their
``time_unix_nano``, log records, spans, resource attributes and the request headers (to check a secret header
arrived). ``refuse(seconds)``, or ``refuse_requests(n)``, answers 503 for a while, as a collector that is down
would, so a test can see the exporter retry and backfill. Bounded waits only (``wait_for``).
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(value):
    """An OTLP ``AnyValue`` as plain Python (str, int, float, bool, bytes, list, dict; None when unset)."""
    kind = value.WhichOneof("value")
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def attributes(key_values) -> dict:
    return {kv.key: any_value(kv.value) for kv in key_values}


@dataclass(frozen=True)
class Point:
    """One gauge/sum data point as received."""

    name: str
    value: float
    time_unix_nano: int
    attributes: dict
    resource: dict
    scope: str
    kind: str  # "gauge", "sum", "histogram", ...


@dataclass(frozen=True)
class LogRecord:
    time_unix_nano: int
    observed_time_unix_nano: int
    severity_number: int
    severity_text: str
    event_name: str
    body: object
    attributes: dict
    resource: dict


@dataclass(frozen=True)
class Span:
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict
    resource: dict


@dataclass
class Received:
    """Everything accepted so far (requests refused with 503 are counted in ``refused``, not kept)."""

    points: list[Point] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)  # one dict per accepted request, keys lower-cased
    bodies: list[bytes] = field(default_factory=list)  # the raw protobuf bodies, accepted ones
    refused: int = 0


def _metric_points(body: bytes) -> list[Point]:
    points = []
    for resource_metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points if kind else []:
                    which = point.WhichOneof("value") if kind in ("gauge", "sum") else None
                    value = getattr(point, which) if which else float(getattr(point, "sum", 0.0))
                    points.append(
                        Point(
                            name=metric.name,
                            value=float(value),
                            time_unix_nano=point.time_unix_nano,
                            attributes=attributes(point.attributes),
                            resource=resource,
                            scope=scope_metrics.scope.name,
                            kind=kind,
                        )
                    )
    return points


def _log_records(body: bytes) -> list[LogRecord]:
    records = []
    for resource_logs in ExportLogsServiceRequest.FromString(body).resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                records.append(
                    LogRecord(
                        time_unix_nano=record.time_unix_nano,
                        observed_time_unix_nano=record.observed_time_unix_nano,
                        severity_number=record.severity_number,
                        severity_text=record.severity_text,
                        event_name=record.event_name,
                        body=any_value(record.body),
                        attributes=attributes(record.attributes),
                        resource=resource,
                    )
                )
    return records


def _spans(body: bytes) -> list[Span]:
    spans = []
    for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Span(
                        name=span.name,
                        start_time_unix_nano=span.start_time_unix_nano,
                        end_time_unix_nano=span.end_time_unix_nano,
                        attributes=attributes(span.attributes),
                        resource=resource,
                    )
                )
    return spans


_SIGNALS = {
    "/v1/metrics": (_metric_points, "points", ExportMetricsServiceResponse),
    "/v1/logs": (_log_records, "logs", ExportLogsServiceResponse),
    "/v1/traces": (_spans, "spans", ExportTraceServiceResponse),
}


class OtlpReceiver:
    """An OTLP/HTTP protobuf endpoint on 127.0.0.1 (a free port unless given); ``url`` is its base, for
    ``OTEL_EXPORTER_OTLP_ENDPOINT``. Use as a context manager or call ``close()``."""

    def __init__(self, port: int = 0):
        self.received = Received()
        self._lock = threading.Lock()
        self._refuse_until = 0.0
        self._refuse_next = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":  # an SDK exporter with compression="gzip"
                    body = gzip.decompress(body)
                headers = {key.lower(): value for key, value in self.headers.items()}
                self._answer(*receiver._take(self.path, headers, body))

            def _answer(self, status: int, payload: bytes):
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()  # quick to close

    def _take(self, path: str, headers: dict, body: bytes) -> tuple[int, bytes]:
        with self._lock:
            refuse = self._refuse_next > 0 or time.monotonic() < self._refuse_until
            if refuse:
                self._refuse_next = max(0, self._refuse_next - 1)
                self.received.refused += 1
        if refuse:
            return 503, b""
        if path not in _SIGNALS:
            return 404, b""
        if headers.get("content-type") != "application/x-protobuf":
            return 415, b""
        decode, into, response = _SIGNALS[path]
        decoded = decode(body)
        with self._lock:
            getattr(self.received, into).extend(decoded)
            self.received.headers.append(headers)
            self.received.bodies.append(body)
        return 200, response().SerializeToString()

    def refuse(self, seconds: float) -> None:
        """Answer 503 to every request for the next ``seconds`` (0 ends an outage now)."""
        self._refuse_until = time.monotonic() + seconds

    def refuse_requests(self, count: int) -> None:
        """Answer 503 to the next ``count`` requests, whenever they come (an outage that needs no clock)."""
        with self._lock:
            self._refuse_next = count

    @property
    def refusing(self) -> bool:
        return time.monotonic() < self._refuse_until

    def points(self, name: str | None = None) -> list[Point]:
        with self._lock:
            return [p for p in self.received.points if name is None or p.name == name]

    def logs(self) -> list[LogRecord]:
        with self._lock:
            return list(self.received.logs)

    def names(self) -> set[str]:
        return {p.name for p in self.points()}

    def wait_for(self, condition: Callable[[OtlpReceiver], bool], timeout_s: float, what: str) -> None:
        """Poll ``condition(self)`` every 50 ms until true; fail after ``timeout_s`` saying ``what`` was awaited."""
        deadline = time.monotonic() + timeout_s
        while not condition(self):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"OTLP receiver: no {what} within {timeout_s} s; got metrics {sorted(self.names())}, "
                    f"{len(self.logs())} log records, {self.received.refused} refused"
                )
            time.sleep(0.05)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> OtlpReceiver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
