"""Shared fixtures for the whole suite.

* The environment is made hermetic at import: tracker telemetry off, no inherited
  ``MLFLOW_TRACKING_URI`` / ``WANDB_API_KEY``, and ``WANDB_BASE_URL`` pointing at a closed loopback
  port, so no test can ever reach the real W&B host.
* ``mlflow_server``: one real MLflow server per session (sqlite, ``--workers 1``, job executor off),
  killed with its process tree at the end; under `make test`'s two xdist workers, the controlling process
  starts it and both use it (``support.parallel``, which also keeps what tests share on one worker).
  ``mlflow_uri`` points a test at it (env ``MLFLOW_TRACKING_URI``, MLflow's HTTP retries off so a bug fails
  fast instead of hanging 4 min).
* ``fault_mlflow_server``: a second, dedicated server that a test may ``kill()``, ``pause()``
  (SIGSTOP), ``resume()`` and ``restart()`` on the same port and database; it is healthy again
  before the next test. Mark such tests ``@pytest.mark.slow``.
* ``primus_caplog``: ``caplog`` that also sees the ``primus.*`` loggers (``primus.log`` stops them
  propagating to the root logger, where plain ``caplog`` listens).
* ``wandb_offline``: W&B in offline mode writing under the test's tmp dir; the ``wandb-core``
  service is torn down afterwards. Read back with ``support.readers.read_wandb_history``.
* ``sink_plugin``: ``sink_plugin(**changes)`` installs the throwaway tracker distribution
  (``support.plugin_dists``) where this process and its children find it, with PRIMUS_SINKS=demo.
* ``pushgateway``, ``prometheus``: a real Pushgateway, and a real Prometheus scraping it every second with
  `primus monitoring rules` loaded, on free 127.0.0.1 ports (``support.prometheus_servers``), once per session.
* ``tmpfs``: ``tmpfs(name, options) -> Path``, a real tmpfs mounted under the test's tmp dir (root only),
  unmounted after; ``support.disks.fill`` uses up its space.

Helpers live in ``tests/support`` and are imported as ``support.<module>`` (this directory is put
on ``sys.path`` below).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import parallel  # noqa: E402
from support.disks import mount_tmpfs, unmount  # noqa: E402
from support.mlflow_server import SERVER_ENV, MlflowServer, free_port  # noqa: E402
from support.plugin_dists import SINK_MODULE_NAME, install_sink_plugin  # noqa: E402

HERMETIC_ENV = {**SERVER_ENV, "WANDB_ERROR_REPORTING": "false", "WANDB_SILENT": "true",
                "WANDB_BASE_URL": f"http://127.0.0.1:{free_port()}"}  # closed port: nothing leaves the box
for _name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "WANDB_API_KEY", "WANDB_MODE", "WANDB_PROJECT",
              "WANDB_ENTITY", "WANDB_TEAM", "WANDB_RUN_NAME", "WANDB_DIR", "DATABRICKS_HOST", "DATABRICKS_TOKEN",
              "PRIMUS_SINKS"):
    os.environ.pop(_name, None)
os.environ.update(HERMETIC_ENV)


@pytest.fixture
def primus_caplog(caplog, monkeypatch):
    """``caplog`` that sees Primus's own log records even after ``primus.log.get_logger`` configured the
    ``primus`` logger not to propagate to the root (which is where caplog listens)."""
    monkeypatch.setattr(logging.getLogger("primus"), "propagate", True)
    return caplog


ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin made its factory
def pytest_configure(config):
    if parallel.is_controller(config):
        server = MlflowServer(config._tmp_path_factory.mktemp("mlflow-session")).start()
        config.stash[_CONTROLLER_SERVER] = server
        config.stash[_GROUPS_FILE] = config._tmp_path_factory.getbasetemp() / "groups.json"


@pytest.hookimpl(optionalhook=True)  # xdist's, in the controlling process: what each worker is given
def pytest_configure_node(node):
    server = node.config.stash[_CONTROLLER_SERVER]
    node.workerinput[parallel.SHARED_SERVER] = f"{server.port} {server.root}"
    node.workerinput[parallel.GROUPS_FILE] = str(node.config.stash[_GROUPS_FILE])


def pytest_unconfigure(config):
    server = config.stash.get(_CONTROLLER_SERVER, None)
    if server is not None:
        server.stop()


def pytest_collection_modifyitems(config, items):
    groups_file = getattr(config, "workerinput", {}).get(parallel.GROUPS_FILE)
    if groups_file:
        parallel.group_tests(items, ROOT, groups_file)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return parallel.GroupScheduling(config, config.stash[_GROUPS_FILE], log)


_CONTROLLER_SERVER = pytest.StashKey[MlflowServer]()
_GROUPS_FILE = pytest.StashKey[Path]()


def _session_server(tmp_path_factory, name: str):
    server = MlflowServer(tmp_path_factory.mktemp(name)).start()
    yield server
    server.stop()


def _fail_fast(monkeypatch) -> None:
    """MLflow's own retries would turn one broken test into a 4-minute hang. One immediate retry stays: the
    client's pooled keep-alive connection can be closed by the server (uvicorn drops one idle for 5 s) just as a
    request goes out on it, a "Connection reset by peer" no test is about (seen once in a full run)."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory, request) -> MlflowServer:
    shared = parallel.shared_server_address(request.config)
    if shared is not None:
        yield MlflowServer(*shared)  # started and stopped by the controlling process
        return
    yield from _session_server(tmp_path_factory, "mlflow-session")


@pytest.fixture
def mlflow_uri(mlflow_server, monkeypatch) -> str:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
    _fail_fast(monkeypatch)
    return mlflow_server.uri


@pytest.fixture
def mlflow_client(mlflow_uri):
    from mlflow import MlflowClient

    return MlflowClient(mlflow_uri)


@pytest.fixture(scope="session")
def _fault_server(tmp_path_factory) -> MlflowServer:
    yield from _session_server(tmp_path_factory, "mlflow-fault")


@pytest.fixture
def fault_mlflow_server(_fault_server, monkeypatch) -> MlflowServer:
    _fail_fast(monkeypatch)
    yield _fault_server
    if _fault_server.running():
        _fault_server.resume()
    if not (_fault_server.running() and _fault_server.healthy()):
        _fault_server.restart()


@pytest.fixture
def wandb_offline(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "wandb"
    root.mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(root))
    yield root
    if "wandb" in sys.modules:
        import wandb

        wandb.teardown()  # stops wandb-core, which otherwise outlives the test


@pytest.fixture
def sink_plugin(tmp_path, monkeypatch):
    site = tmp_path / "plugin_site"

    def install(**changes) -> Path:
        install_sink_plugin(site, **changes)
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
        monkeypatch.setenv("PRIMUS_SINKS", "demo")
        return site

    sys.modules.pop(SINK_MODULE_NAME, None)  # each test imports the plugin it installed
    yield install
    sys.modules.pop(SINK_MODULE_NAME, None)


@pytest.fixture
def tmpfs(tmp_path):
    mounted = []

    def mount(name: str, options: str) -> Path:
        mounted.append(mount_tmpfs(tmp_path / name, options))
        return mounted[-1]

    yield mount
    for target in mounted:
        unmount(target)


@pytest.fixture
def webhook_receiver():
    """A real HTTP server on 127.0.0.1 keeping what an alert webhook posts (``support.webhook_server``)."""
    from support.webhook_server import Receiver

    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node Slurm cluster (``support.slurm_cluster``), its SLURM_CONF set for the session's tests."""
    from support.slurm_cluster import SlurmCluster, missing

    why = missing()
    if why is not None:
        pytest.fail(f"no Slurm cluster for the test: {why}")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    yield cluster
    cluster.stop()
    if previous is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="session")
def pushgateway(tmp_path_factory):
    """A real Prometheus Pushgateway on 127.0.0.1 (``support.prometheus_servers``), stopped at the session's end."""
    from support.prometheus_servers import Pushgateway

    gateway = Pushgateway(tmp_path_factory.mktemp("pushgateway")).start()
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def prometheus(pushgateway, tmp_path_factory):
    """A real Prometheus scraping ``pushgateway`` every second with `primus monitoring rules` loaded (its stall
    threshold ``support.prometheus_servers.STALL_AFTER_S``), once it scrapes."""
    from support.prometheus_servers import STALL_AFTER_S, Prometheus

    from primus.monitoring.rules import rules_yaml

    server = Prometheus(tmp_path_factory.mktemp("prometheus"), pushgateway, rules_yaml(STALL_AFTER_S)).start()
    yield server
    server.stop()
