"""OpenTelemetry sink: the run's figures as OTLP gauges and its alerts as OTLP log records, posted over
OTLP/HTTP (protobuf) to the collector that OpenTelemetry's standard variables name (``settings/otlp_env.py``).

Every point carries the time upstream logged it (the journal record's), so a collector that was down gets the
points it missed, with their own times, once it answers again: ``write`` raises on a failed request, the worker
retries with back-off, and the journal cursor only moves past what the collector took (the same for a relaunch and
``primus tracking sync``). Points older than ``OtlpConfig.max_age_s`` are left out, said once (collectors refuse
samples that old). A collector's "400 Bad Request" is final by the OTLP spec: that batch is dropped, said once.
Resource attributes: ``service.name=primus``, ``primus.run``, ``primus.experiment``, ``primus.backend``,
``host.name``; each point has ``primus.step``. The headers (a credential) are read from the environment here, in
the delivery process, and sent only as headers.
"""

from __future__ import annotations

import gzip
import logging
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence

from primus.redaction import redact_text
from primus.tracking.journal.records import BACKEND_TAG, Alert, Metrics, Record, SinkName, event_of
from primus.tracking.settings import otlp_env
from primus.tracking.settings.config import OtlpConfig, resolved
from primus.tracking.sinks.sink import Sink, SinkUnavailable
from primus.tracking.trackers.context import SinkContext

log = logging.getLogger("primus.tracking")

# ~40 bytes of protobuf a point: 500 steps of 60 figures are ~1.2 MB, well under collectors' request limits
RECORDS_PER_REQUEST = 500
_PROTOBUF = "application/x-protobuf"


class OtlpSink(Sink):
    name = SinkName.OTLP

    def __init__(self, context: SinkContext):
        self.context = context
        self.cfg: OtlpConfig = resolved(context.config.otlp, "otlp")
        self.resource = {
            "service.name": "primus",
            "primus.run": context.run_name,
            "primus.experiment": context.experiment_name,
            BACKEND_TAG: context.tags.get(BACKEND_TAG, ""),
            "host.name": socket.gethostname(),
        }
        self._headers: dict[str, dict[str, str]] = {}
        self._said: set[str] = set()

    def open(self) -> str:
        try:
            from primus.tracking.trackers import otlp_protobuf
        except ImportError as e:
            raise SinkUnavailable(
                f"opentelemetry-proto is not importable ({e}): pip install 'primus-tracking[otlp]'"
            ) from e
        self._protobuf = otlp_protobuf
        self._headers = {signal: otlp_env.headers(os.environ, signal) for signal in (otlp_env.METRICS, otlp_env.LOGS)}
        return redact_text(resolved(self.cfg.metrics_endpoint, "otlp.metrics_endpoint"))  # the cursor's target, kept

    def chunks(self, records: Sequence[Record]) -> Iterable[Sequence[Record]]:
        for start in range(0, len(records), RECORDS_PER_REQUEST):
            yield records[start : start + RECORDS_PER_REQUEST]

    def write(self, records: Sequence[Record]) -> None:
        oldest_ms = (time.time() - self.cfg.max_age_s) * 1000
        fresh = [r for r in records if r.ts_ms >= oldest_ms]
        if len(fresh) < len(records):
            self._say_once("age", "points older than %.0f s left out (otlp.max_age_s)", self.cfg.max_age_s)
        points, alerts = [], []
        for r in fresh:
            match event_of(r):
                case Metrics(values):
                    points += [
                        (self._protobuf.metric_name(key), r.ts_ms * 1_000_000, r.step, value)
                        for key, value in values.items()
                        if self._protobuf.is_number(value)
                    ]
                case Alert() as alert:
                    alerts.append(alert)
        if points:
            self._post(
                otlp_env.METRICS, self.cfg.metrics_endpoint, self._protobuf.metrics_request(self.resource, points)
            )
        if alerts and self.cfg.logs_endpoint:
            self._post(otlp_env.LOGS, self.cfg.logs_endpoint, self._alerts(alerts))

    def _alerts(self, alerts: list[Alert]):
        return self._protobuf.logs_request(self.resource, alerts, time.time_ns(), self.context.run_name)

    def _post(self, signal: str, url: str | None, request) -> None:
        headers = {**self._headers[signal], "Content-Type": _PROTOBUF}
        body = request.SerializeToString()
        if self.cfg.compression == "gzip":  # ~8x smaller for 100 steps of 30 figures (benchmarks/otlp_export.py)
            body, headers["Content-Encoding"] = gzip.compress(body, compresslevel=1), "gzip"
        http = urllib.request.Request(resolved(url, signal), data=body, headers=headers)
        try:
            with urllib.request.urlopen(http, timeout=self.cfg.timeout_s) as answer:
                answer.read()
        except urllib.error.HTTPError as e:
            if e.code != 400:
                raise OSError(f"OTLP {signal}: the collector answered {e.code} {e.reason}") from None
            self._say_once("400", "the collector refused a batch of %s as malformed (400): it is dropped", signal)

    def _say_once(self, what: str, message: str, *args) -> None:
        if what not in self._said:
            self._said.add(what)
            log.warning("primus tracking: OTLP: " + message, *args)
