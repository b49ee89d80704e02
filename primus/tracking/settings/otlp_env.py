"""OpenTelemetry's own exporter variables, read as its SDK reads them, for the OTLP sink (trackers/otlp.py).

``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`` is used as it is; otherwise ``OTEL_EXPORTER_OTLP_ENDPOINT`` with
``/v1/metrics`` (``/v1/logs``) appended. Either one set turns the sink on. ``OTEL_EXPORTER_OTLP_COMPRESSION``
(the metrics' own winning) may ask for gzip. Headers (``OTEL_EXPORTER_OTLP_HEADERS``,
the signal's own winning) are ``k=v,k2=v2`` with URL-encoded values; they usually hold a credential, so they are
read by the sink in the delivery process and kept nowhere: not in the settings, not in ``meta.json``
(``redaction`` masks them wherever a variable's value shows).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"
COMPRESSION = "OTEL_EXPORTER_OTLP_COMPRESSION"
COMPRESSIONS = ("gzip", "none")
METRICS, LOGS = "metrics", "logs"


def signal_variable(signal: str, what: str) -> str:
    """``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` and the like."""
    return f"OTEL_EXPORTER_OTLP_{signal.upper()}_{what}"


def endpoint(env: Mapping[str, str], signal: str) -> tuple[str, str] | None:
    """(the URL a signal is posted to, the variable it came from); None when neither variable is set."""
    own = signal_variable(signal, "ENDPOINT")
    if env.get(own, "").strip():
        return env[own].strip(), own
    if env.get(ENDPOINT, "").strip():
        return env[ENDPOINT].strip().rstrip("/") + f"/v1/{signal}", ENDPOINT
    return None


def compression(env: Mapping[str, str]) -> tuple[str, str]:
    """(the metrics' compression as the variables name it, lower-cased, "none" when unset; the variable read)."""
    own = signal_variable(METRICS, "COMPRESSION")
    name = own if env.get(own, "").strip() else COMPRESSION
    return (env.get(name, "").strip().lower() or "none"), name


def requested(env: Mapping[str, str]) -> bool:
    """Whether the variables name a collector: a run is tracked for it even with every other tracker off."""
    return endpoint(env, METRICS) is not None


def headers(env: Mapping[str, str], signal: str) -> dict[str, str]:
    """The headers to send with a signal's requests, keys lower-cased, values URL-decoded."""
    raw = env.get(signal_variable(signal, "HEADERS")) or env.get(HEADERS, "")
    out = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[unquote(key).strip().lower()] = unquote(value).strip()
    return out
