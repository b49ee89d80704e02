"""The light MLflow REST client (primus/tracking/trackers/mlflow_rest.py): every call the sink makes against the real
MLflow server, read back with MLflow's own client; MLflow's error codes; artifacts PUT to the server's proxy and
downloaded back; auth and TLS settings as request headers and a TLS handshake (tiny local servers recording what
arrives: our own logic); a dead or silent server fails within the timeout; and a whole run with an MLflow server
imports none of mlflow (nor wandb, pandas) in any process."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import math
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from primus.tracking.trackers.mlflow_artifacts import upload_run_files
from primus.tracking.trackers.mlflow_rest import (
    MetricPoint,
    MlflowRestClient,
    MlflowRestError,
    credentials,
    needs_full_client,
    ssl_context,
)

TIMEOUT_S = 5.0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def rest(mlflow_uri) -> MlflowRestClient:
    client = MlflowRestClient(mlflow_uri, TIMEOUT_S)
    yield client
    client.close()


def test_create_log_resume_and_terminate_a_run_on_the_real_server(rest, mlflow_client):
    name = _unique("rest")
    assert rest.get_experiment_id(name) is None
    experiment_id = rest.create_experiment(name)
    assert rest.get_experiment_id(name) == experiment_id == mlflow_client.get_experiment_by_name(name).experiment_id

    run_id = rest.create_run(experiment_id, "light", {"team": "x", "mlflow.user": "alice"})
    ts = int(time.time() * 1000)
    rest.log_batch(run_id, metrics=[MetricPoint("loss", 0.5, ts, 1), MetricPoint("loss", 0.25, ts + 1, 2),
                                    MetricPoint("grad", math.nan, ts, 1), MetricPoint("grad", math.inf, ts, 2)],
                   params={"lr": "0.1"}, tags=[("stage", "pre")])
    rest.log_batch(run_id, metrics=[MetricPoint("loss", 0.25, ts + 1, 2)])  # a resend: absorbed, not doubled
    rest.set_terminated(run_id, "FAILED")

    run = mlflow_client.get_run(run_id)
    assert (run.info.run_name, run.info.status, run.info.user_id) == ("light", "FAILED", "alice")
    assert run.info.end_time is not None
    assert run.data.params == {"lr": "0.1"}
    assert {"team": "x", "stage": "pre"}.items() <= run.data.tags.items()
    history = mlflow_client.get_metric_history(run_id, "loss")
    assert sorted((m.step, m.value, m.timestamp) for m in history) == [(1, 0.5, ts), (2, 0.25, ts + 1)]
    grad = sorted((m.step, m.value) for m in mlflow_client.get_metric_history(run_id, "grad"))
    assert math.isnan(grad[0][1]) and grad[1] == (2, sys.float_info.max)  # MLflow's store clips infinity

    view = rest.get_run(run_id)  # a resumed job reads this back
    assert (view.run_id, view.status, view.params) == (run_id, "FAILED", {"lr": "0.1"})
    assert view.artifact_uri == run.info.artifact_uri
    rest.set_status(run_id, "RUNNING")
    again = mlflow_client.get_run(run_id).info
    assert again.status == "RUNNING" and again.end_time == run.info.end_time  # the status only


def test_mlflow_error_codes_reach_the_caller(rest):
    with pytest.raises(MlflowRestError) as missing:
        rest.get_run("0" * 32)
    assert missing.value.error_code == "RESOURCE_DOES_NOT_EXIST" and missing.value.status == 404
    name = _unique("twice")
    rest.create_experiment(name)
    with pytest.raises(MlflowRestError) as twice:
        rest.create_experiment(name)
    assert twice.value.error_code == "RESOURCE_ALREADY_EXISTS"
    assert name in str(twice.value)  # the server's message, for the warning the worker prints


def test_run_files_are_put_to_the_servers_artifact_proxy_and_read_back(rest, mlflow_client, tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "logs" / "rank 0").mkdir(parents=True)
    (run_dir / "logs" / "train.log").write_text("step 1 loss 0.5\n")
    (run_dir / "logs" / "rank 0" / "trace.json").write_bytes(b'{"traceEvents": []}')
    run_id = rest.create_run(rest.create_experiment(_unique("artifacts")), None, {})
    assert rest.artifact_uri(run_id).startswith("mlflow-artifacts:")

    assert upload_run_files(rest, run_id, run_dir, ["logs"]) == 2
    listed = {a.path for a in mlflow_client.list_artifacts(run_id, "logs")}
    assert listed == {"logs/train.log", "logs/rank 0"}
    down = Path(mlflow_client.download_artifacts(run_id, "logs", str(tmp_path / "down")))
    assert (down / "train.log").read_text() == "step 1 loss 0.5\n"
    assert (down / "rank 0" / "trace.json").read_bytes() == b'{"traceEvents": []}'


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``reply`` (status, body) and keeps its headers."""
    seen: list[dict[str, str]] = []
    ok = (200, {"run": {"info": {"run_id": "r1", "status": "RUNNING", "artifact_uri": "s3://b/r1"}}})
    reply = ok

    def do_GET(self):
        type(self).seen.append({**self.headers, "path": self.path})
        self._answer()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append({**self.headers, "path": self.path, "body": json.loads(body)})
        self._answer()

    def _answer(self):
        status, body = self.reply
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """``serve(tls=None)``: a recording server on 127.0.0.1 (TLS with an ``ssl.SSLContext``); returns its port."""
    servers = []

    def start(tls: ssl.SSLContext | None = None) -> int:
        Recorder.seen = []
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _headers(uri: str, env: dict[str, str]) -> dict[str, str]:
    client = MlflowRestClient(uri, TIMEOUT_S, env)
    client.get_run("r1")
    client.close()
    return Recorder.seen[-1]


def test_credentials_become_the_headers_mlflow_sends(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials of the user's
    port = serve()
    plain = f"http://127.0.0.1:{port}"

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert "Authorization" not in _headers(plain, {})
    token = {"MLFLOW_TRACKING_TOKEN": "tok-123"}
    assert _headers(plain, token)["Authorization"] == "Bearer tok-123"
    env_basic = {"MLFLOW_TRACKING_USERNAME": "ann", "MLFLOW_TRACKING_PASSWORD": "pw-env", **token}
    assert _headers(plain, env_basic)["Authorization"] == basic("ann", "pw-env")  # basic before the token
    in_uri = f"http://bob:p%40ss@127.0.0.1:{port}/"
    seen = _headers(in_uri, env_basic)
    assert seen["Authorization"] == basic("bob", "p@ss")  # the URI's, as requests applies it last
    assert seen["path"] == "/api/2.0/mlflow/runs/get?run_id=r1"
    assert _headers(plain, {"MLFLOW_WORKSPACE": "team-a"})["X-MLFLOW-WORKSPACE"] == "team-a"

    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "credentials").write_text(
        "[mlflow]\nmlflow_tracking_username = cat\nmlflow_tracking_password = pw-file\n")
    assert _headers(plain, {})["Authorization"] == basic("cat", "pw-file")
    assert credentials(plain, {"MLFLOW_TRACKING_PASSWORD": "pw-env"}, tmp_path).secrets[0] == "pw-env"


def test_error_text_names_no_credential(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    port = serve()
    try:
        for uri, env, secret in ((f"http://u:s3cr3t-pw@127.0.0.1:{port}", {}, "s3cr3t-pw"),
                                 (f"http://127.0.0.1:{port}", {"MLFLOW_TRACKING_TOKEN": "tok-9"}, "tok-9")):
            Recorder.reply = (401, {"error_code": "UNAUTHENTICATED", "message": f"bad credentials {secret}"})
            with pytest.raises(MlflowRestError) as e:
                MlflowRestClient(uri, TIMEOUT_S, env).get_run("r1")
            assert e.value.error_code == "UNAUTHENTICATED" and e.value.status == 401
            assert str(e.value).endswith("bad credentials ***") and secret not in str(e.value)
        Recorder.reply = (503, "<html>busy</html>")  # no MLflow error body: the status's code, as MLflow maps it
        with pytest.raises(MlflowRestError) as e:
            MlflowRestClient(f"http://127.0.0.1:{port}", TIMEOUT_S, {}).get_run("r1")
        assert e.value.error_code == "TEMPORARILY_UNAVAILABLE"
    finally:
        Recorder.reply = Recorder.ok


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "server.pem", tmp_path / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_settings_decide_the_handshake(serve, tmp_path):
    cert, key = _self_signed(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    uri = f"https://127.0.0.1:{serve(server_side)}"

    with pytest.raises(MlflowRestError, match="CERTIFICATE_VERIFY_FAILED"):  # certifi's CAs do not know it
        MlflowRestClient(uri, TIMEOUT_S, {}).get_run("r1")
    trusted = {"MLFLOW_TRACKING_SERVER_CERT_PATH": str(cert)}
    assert MlflowRestClient(uri, TIMEOUT_S, trusted).get_run("r1").run_id == "r1"
    assert MlflowRestClient(uri, TIMEOUT_S, {"MLFLOW_TRACKING_INSECURE_TLS": "true"}).get_run("r1").run_id == "r1"

    both = {"MLFLOW_TRACKING_INSECURE_TLS": "true", "MLFLOW_TRACKING_SERVER_CERT_PATH": str(cert)}
    with pytest.raises(ValueError, match="only one of them"):
        ssl_context(both)
    with pytest.raises(ValueError, match="MLFLOW_TRACKING_INSECURE_TLS='yes please'"):
        ssl_context({"MLFLOW_TRACKING_INSECURE_TLS": "yes please"})
    bundle = tmp_path / "client.pem"  # a client certificate: its key and certificate in one file, as requests takes it
    bundle.write_bytes(key.read_bytes() + cert.read_bytes())
    assert ssl_context({"MLFLOW_TRACKING_CLIENT_CERT_PATH": str(bundle), "MLFLOW_TRACKING_INSECURE_TLS": "1"})
    with pytest.raises(FileNotFoundError):
        ssl_context({"MLFLOW_TRACKING_CLIENT_CERT_PATH": str(tmp_path / "missing.pem")})


def test_nan_and_the_infinities_are_sent_as_protobufs_json_strings(serve):
    """MLflow's REST API parses a metric's value as protobuf JSON: a bare NaN or Infinity is not JSON at all."""
    client = MlflowRestClient(f"http://127.0.0.1:{serve()}", TIMEOUT_S, {})
    values = [1.5, -0.0, math.nan, math.inf, -math.inf, sys.float_info.max]
    client.log_batch("r1", [MetricPoint("m", v, 1000, step) for step, v in enumerate(values)])
    client.close()
    sent = Recorder.seen[-1]
    assert sent["path"].endswith("/api/2.0/mlflow/runs/log-batch")
    assert [m["value"] for m in sent["body"]["metrics"]] == [1.5, -0.0, "NaN", "Infinity", "-Infinity",
                                                             sys.float_info.max]
    assert [m["step"] for m in sent["body"]["metrics"]] == list(range(len(values)))


def test_a_dead_or_silent_server_fails_within_the_timeout():
    timeout_s = 1.0
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(MlflowRestError) as refused:
        MlflowRestClient(f"http://127.0.0.1:{port}", timeout_s, {}).get_run("r1")
    assert refused.value.error_code is None and "ConnectionRefusedError" in str(refused.value)

    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers: a hung server
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        client = MlflowRestClient(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s, {})
        outcome: list[BaseException | None] = []
        start = time.monotonic()
        call = threading.Thread(target=lambda: outcome.append(_raised(lambda: client.get_run("r1"))), daemon=True)
        call.start()
        call.join(timeout_s * 30)  # its own bound, far past the timeout: a call without one would wait forever
        assert outcome, f"get_run on a silent server was still waiting after {timeout_s * 30:.0f} s: no HTTP timeout"
        assert isinstance(outcome[0], MlflowRestError) and "timed out" in str(outcome[0]), outcome
        assert time.monotonic() - start < timeout_s * 3  # one attempt, no retries


def _raised(call) -> BaseException | None:
    try:
        call()
    except BaseException as e:  # noqa: BLE001 - handed to the test's thread to judge
        return e
    return None


def test_uris_and_settings_only_the_full_client_serves():
    assert not needs_full_client("http://127.0.0.1:5000", {})
    assert not needs_full_client("https://mlflow.example.com/prefix", {"MLFLOW_TRACKING_AUTH": ""})
    for uri in ("databricks", "databricks://profile", "sqlite:///tmp/m.db", "file:///tmp/mlruns", "/tmp/mlruns"):
        assert needs_full_client(uri, {})
    assert needs_full_client("http://127.0.0.1:5000", {"MLFLOW_TRACKING_AUTH": "my_plugin"})
    assert needs_full_client("http://127.0.0.1:5000", {"MLFLOW_TRACKING_AWS_SIGV4": "true"})


def test_a_proxy_for_the_server_needs_the_full_client(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://proxy.example:3128")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "internal.example")
    assert needs_full_client("https://mlflow.example.com", {})
    assert not needs_full_client("https://mlflow.internal.example", {})
    assert not needs_full_client("http://mlflow.example.com", {})  # only https is proxied here


WATCH = "PRIMUS_TEST_IMPORT_WATCH"
SITECUSTOMIZE = f"""
import os, sys

def _watch(event, args):
    if event == "import" and args[0].split(".")[0] in ("mlflow", "wandb", "pandas"):
        with open(os.environ[{WATCH!r}], "a") as f:
            f.write(f"{{os.getpid()}} {{sys.argv[0]}} {{args[0]}}\\n")

sys.addaudithook(_watch)
"""
RUN = """
import sys
from pathlib import Path
from primus.tracking import MlflowConfig, TrackingConfig, start_run
run = start_run(TrackingConfig(run_dir=Path(sys.argv[1]), experiment_name=sys.argv[2],
                               mlflow=MlflowConfig(upload_logs=True), exit_deadline_s=60))
(Path(sys.argv[1]) / "logs").mkdir(exist_ok=True)
(Path(sys.argv[1]) / "logs" / "out.log").write_text("hello")
for step in range(5):
    run.log(step, {"loss": 1.0 / (step + 1)})
run.finish()
"""


def test_a_run_with_an_mlflow_server_imports_no_mlflow_in_any_process(mlflow_uri, mlflow_client, tmp_path):
    """The delivery process (and the training process) with MLflow on an http URI and every other tracker off:
    no mlflow, wandb or pandas module is ever imported; the run, its metrics and its uploaded log are there."""
    site, watch = tmp_path / "site", tmp_path / "imports.txt"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           WATCH: str(watch)}
    experiment = _unique("no-import")
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "run"), experiment], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not watch.exists(), watch.read_text()

    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(experiment).experiment_id])
    assert run.info.status == "FINISHED"
    assert [m.step for m in mlflow_client.get_metric_history(run.info.run_id, "loss")] == [0, 1, 2, 3, 4]
    assert [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "logs")] == ["logs/out.log"]
    probe = subprocess.run([sys.executable, "-c", "import mlflow"], env=env, timeout=240)  # the watch works
    assert probe.returncode == 0 and "mlflow" in watch.read_text()
