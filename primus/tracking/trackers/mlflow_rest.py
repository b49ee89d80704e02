"""A small MLflow tracking client over MLflow's REST API (``/api/2.0/mlflow/...``), standard library only, for
``http(s)://`` tracking servers: importing ``mlflow`` costs the delivery process ~3 CPU-seconds and ~170 MiB
(pandas, FastAPI, its GenAI modules) for the seven calls the MLflow sink makes. It sends what
``mlflow.store.tracking.rest_store.RestStore`` sends for them and honours the same settings: basic auth
(``user:password@`` in the URI, ``MLFLOW_TRACKING_USERNAME`` / ``_PASSWORD``, ``~/.mlflow/credentials``), a
bearer ``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_INSECURE_TLS``, ``MLFLOW_TRACKING_SERVER_CERT_PATH``,
``MLFLOW_TRACKING_CLIENT_CERT_PATH`` and ``MLFLOW_WORKSPACE``. One attempt per call, bounded by the timeout: the
sink's worker owns retries. Errors carry MLflow's ``error_code``; their text names no credential.
Settings this client cannot honour (``MLFLOW_TRACKING_AUTH`` plugins, AWS SigV4, an HTTP proxy) are
``needs_full_client``'s business: the sink uses ``MlflowClient`` then."""

from __future__ import annotations

import base64
import configparser
import http.client
import json
import math
import os
import select
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

from primus.redaction import MASK, redact_text

API = "/api/2.0/mlflow"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts"
# MLflow's own mapping (mlflow.exceptions.HTTP_STATUS_TO_ERROR_CODE) for a reply without an error_code
STATUS_ERROR_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "ENDPOINT_NOT_FOUND",
    409: "RESOURCE_CONFLICT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    501: "NOT_IMPLEMENTED",
    503: "TEMPORARILY_UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# settings only the full client implements (request-auth plugins, AWS request signing)
FULL_CLIENT_VARIABLES = ("MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_AWS_SIGV4")
TRUE, FALSE = ("true", "1"), ("false", "0", "")


class MlflowRestError(RuntimeError):
    """A failed MLflow call: ``error_code`` is the server's (``RESOURCE_DOES_NOT_EXIST``, ...), or MLflow's
    code for the HTTP status, or None when no reply came (refused, timed out, reset)."""

    def __init__(self, message: str, error_code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.error_code = error_code
        self.status = status


class RunView(NamedTuple):
    """What the sink reads of a run."""

    run_id: str
    status: str
    params: dict[str, str]
    artifact_uri: str


class MetricPoint(NamedTuple):
    key: str
    value: float
    timestamp: int  # ms
    step: int


def needs_full_client(tracking_uri: str, env: Mapping[str, str] = os.environ) -> bool:
    """True for URIs and settings only ``MlflowClient`` serves: Databricks, local stores (sqlite:, file:,
    paths), request-auth plugins, AWS SigV4, a proxy the environment sets for the server."""
    scheme = urlsplit(tracking_uri).scheme.lower()
    if scheme not in ("http", "https"):
        return True
    if any(env.get(name, "").strip().lower() not in FALSE for name in FULL_CLIENT_VARIABLES):
        return True
    return _proxied(tracking_uri)


def _proxied(url: str) -> bool:
    from urllib.request import getproxies, proxy_bypass  # as requests decides (HTTP(S)_PROXY, NO_PROXY)

    parts = urlsplit(url)
    return parts.scheme in getproxies() and not proxy_bypass(parts.hostname or "")


class Credentials(NamedTuple):
    authorization: str | None  # the Authorization header
    secrets: tuple[str, ...]  # literals no message may show


def credentials(tracking_uri: str, env: Mapping[str, str] = os.environ, home: Path | None = None) -> Credentials:
    """As MLflow and requests resolve them: ``user:password@`` in the URI first (requests applies it last),
    then the username/password from the environment or ``~/.mlflow/credentials``, then the bearer token."""
    parts = urlsplit(tracking_uri)
    file_user, file_password = _credentials_file(home or Path.home())
    if parts.username is not None or parts.password is not None:
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
    else:
        user = env.get("MLFLOW_TRACKING_USERNAME") or file_user or ""
        password = env.get("MLFLOW_TRACKING_PASSWORD") or file_password or ""
    token = env.get("MLFLOW_TRACKING_TOKEN")
    if parts.username is not None or user and password:
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        return Credentials(f"Basic {basic}", tuple(s for s in (password, basic) if s))
    if token:
        return Credentials(f"Bearer {token}", (token,))
    return Credentials(None, ())


def _credentials_file(home: Path) -> tuple[str | None, str | None]:
    path = home / ".mlflow" / "credentials"
    if not path.is_file():
        return None, None
    parser = configparser.ConfigParser()
    parser.read(path)
    section = parser["mlflow"] if "mlflow" in parser else {}
    return section.get("mlflow_tracking_username"), section.get("mlflow_tracking_password")


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value not in TRUE + FALSE:
        raise ValueError(f"{name}={env[name]!r} is not a boolean: set it to true or false")
    return value in TRUE


def ssl_context(env: Mapping[str, str] = os.environ):
    """The TLS settings MLflow passes to requests (``verify``, ``cert``), as an ``ssl.SSLContext``. The CAs
    are those requests trusts: ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``, else certifi's bundle."""
    import ssl

    insecure = _flag(env, "MLFLOW_TRACKING_INSECURE_TLS")
    server_cert = env.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    client_cert = env.get("MLFLOW_TRACKING_CLIENT_CERT_PATH")
    if insecure and server_cert:
        raise ValueError(
            "MLFLOW_TRACKING_INSECURE_TLS=true and MLFLOW_TRACKING_SERVER_CERT_PATH are both set: "
            "MLflow accepts only one of them; unset one"
        )
    if insecure:
        context = ssl._create_unverified_context()
    else:
        bundle = server_cert or env.get("REQUESTS_CA_BUNDLE") or env.get("CURL_CA_BUNDLE") or _certifi_bundle()
        if bundle and os.path.isdir(bundle):
            context = ssl.create_default_context(capath=bundle)
        else:
            context = ssl.create_default_context(cafile=bundle)
    if client_cert:
        context.load_cert_chain(client_cert)  # a .pem holding the certificate and its key, as requests takes it
    return context


def _certifi_bundle() -> str | None:
    try:
        import certifi
    except ImportError:
        return None
    return certifi.where()


def _number(value: float) -> float | str:
    """Protobuf's JSON for a double, as MLflow sends it: NaN and the infinities are strings."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _pairs(items: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    items = items.items() if isinstance(items, Mapping) else items
    return [{"key": k, "value": v} for k, v in items]


class MlflowRestClient:
    """One keep-alive connection to the tracking server; calls may come from any thread (one at a time)."""

    def __init__(self, tracking_uri: str, timeout_s: float, env: Mapping[str, str] = os.environ):
        parts = urlsplit(tracking_uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"MLflow tracking URI {redact_text(tracking_uri)!r} is not an http(s) server URI")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.netloc = parts.netloc.rpartition("@")[2]
        self.tracking_uri = tracking_uri
        self.base_path = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        creds = credentials(tracking_uri, env)
        self._secrets = creds.secrets
        self._headers = {"User-Agent": "primus-mlflow-rest", "Accept": "application/json"}
        if creds.authorization:
            self._headers["Authorization"] = creds.authorization
        if workspace := env.get("MLFLOW_WORKSPACE", "").strip():
            self._headers["X-MLFLOW-WORKSPACE"] = workspace
        self._ssl = ssl_context(env) if self.scheme == "https" else None
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self._artifact_uris: dict[str, str] = {}

    # -- the calls the sink makes ------------------------------------------------------------------------

    def get_experiment_id(self, name: str) -> str | None:
        try:
            reply = self._call("GET", "/experiments/get-by-name", {"experiment_name": name})
        except MlflowRestError as e:
            if e.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        return reply["experiment"]["experiment_id"]

    def create_experiment(self, name: str, artifact_location: str | None = None) -> str:
        body = {"name": name, **({"artifact_location": artifact_location} if artifact_location else {})}
        return self._call("POST", "/experiments/create", body)["experiment_id"]

    def create_run(self, experiment_id: str, run_name: str | None, tags: Mapping[str, str]) -> str:
        body = {
            "experiment_id": str(experiment_id),
            "user_id": tags.get("mlflow.user", "unknown"),
            "start_time": int(time.time() * 1000),
            "tags": _pairs(tags),
        }
        if run_name is not None:
            body["run_name"] = run_name
        return self._remember(self._call("POST", "/runs/create", body)["run"]).run_id

    def get_run(self, run_id: str) -> RunView:
        return self._remember(self._call("GET", "/runs/get", {"run_id": run_id})["run"])

    def set_status(self, run_id: str, status: str) -> None:
        """The run's status only; its end time stays (``MlflowClient.update_run``)."""
        self._call("POST", "/runs/update", {"run_id": run_id, "status": status})

    def set_terminated(self, run_id: str, status: str) -> None:
        self._call("POST", "/runs/update", {"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})

    def log_batch(
        self,
        run_id: str,
        metrics: Sequence[MetricPoint] = (),
        params: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        tags: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> None:
        body = {
            "run_id": run_id,
            "metrics": [
                {"key": m.key, "value": _number(m.value), "timestamp": m.timestamp, "step": m.step} for m in metrics
            ],
            "params": _pairs(params),
            "tags": _pairs(tags),
        }
        self._call("POST", "/runs/log-batch", body)

    def artifact_uri(self, run_id: str) -> str:
        if run_id not in self._artifact_uris:
            self.get_run(run_id)
        return self._artifact_uris[run_id]

    def proxies_artifacts(self, artifact_uri: str) -> bool:
        """True when this server stores the run's artifacts itself (``mlflow-artifacts:/...``, no other host)."""
        parts = urlsplit(artifact_uri)
        return parts.scheme == "mlflow-artifacts" and parts.netloc in ("", self.netloc)

    def upload_artifact(self, artifact_uri: str, local_path: Path, artifact_path: str) -> None:
        """PUT one file to the server's artifact proxy (``proxies_artifacts(artifact_uri)``), as
        ``mlflow.store.artifact.http_artifact_repo.HttpArtifactRepository.log_artifact`` does."""
        parts = urlsplit(artifact_uri)
        path = "/".join(p for p in (parts.path.strip("/"), artifact_path.strip("/"), local_path.name) if p)
        endpoint = f"{self.base_path}{ARTIFACTS_API}/{quote(path)}"
        size = local_path.stat().st_size
        with open(local_path, "rb") as f:
            self._request(
                "PUT", endpoint, f, {"Content-Type": _mime_type(local_path.name), "Content-Length": str(size)}
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- transport -------------------------------------------------------------------------------------------

    def _remember(self, run: dict) -> RunView:
        info, data = run["info"], run.get("data", {})
        view = RunView(
            info["run_id"],
            info["status"],
            {p["key"]: p.get("value", "") for p in data.get("params", [])},
            info.get("artifact_uri", ""),
        )
        self._artifact_uris[view.run_id] = view.artifact_uri
        return view

    def _call(self, method: str, endpoint: str, body: dict) -> dict:
        path = f"{self.base_path}{API}{endpoint}"
        if method == "GET":
            path += "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in body.items())
            payload, headers = None, {}
        else:
            payload, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
        text = self._request(method, path, payload, headers)
        return json.loads(text) if text.strip() else {}

    def _request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> str:
        where = f"MLflow {method} {path.split('?')[0]} at {self.scheme}://{self.host}"
        with self._lock:
            try:
                conn = self._connection()
                conn.request(method, path, body=body, headers={**self._headers, **headers})
                response = conn.getresponse()
                text = response.read().decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise MlflowRestError(self._redact(f"{where} failed: {type(e).__name__}: {e}")) from None
            if response.will_close:
                self._drop()
        if 200 <= response.status < 300:
            return text
        raise self._error(where, response.status, text)

    def _connection(self) -> http.client.HTTPConnection:
        """The kept-alive connection, unless the server closed it while idle (uvicorn does after 5 s): a request
        on it would fail, so a new one is opened, as urllib3 does for a dropped pooled connection."""
        if self._conn is not None and self._conn.sock is not None:
            readable, _, _ = select.select([self._conn.sock], [], [], 0)
            if readable:  # EOF (or a stray byte): this connection is done
                self._drop()
        if self._conn is None:
            if self.scheme == "https":
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout_s, context=self._ssl
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _error(self, where: str, status: int, text: str) -> MlflowRestError:
        try:
            reply = json.loads(text)
        except ValueError:
            reply = None
        if isinstance(reply, dict) and reply.get("error_code"):
            code, message = str(reply["error_code"]), str(reply.get("message", ""))
        else:
            code, message = STATUS_ERROR_CODES.get(status, "INTERNAL_ERROR"), text[:500]
        return MlflowRestError(self._redact(f"{where}: HTTP {status} {code}: {message}"), code, status)

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return redact_text(text)


def _mime_type(name: str) -> str:
    import mimetypes

    return mimetypes.guess_type(name)[0] or "application/octet-stream"
