"""A real Prometheus Pushgateway, and a real Prometheus scraping it every second and evaluating the rules
``primus monitoring rules`` prints, for tests: Debian's ``prometheus-pushgateway`` and ``prometheus`` (installed by
`make setup-prometheus`), on free 127.0.0.1 ports, their data in a temporary folder. Prometheus's discovery hands it
the gateway on a 5 s tick, so ``start`` waits until the target is scraped (5-6 s after start on a quiet box)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.mlflow_server import free_port

START_TIMEOUT_S = 60.0
STALL_AFTER_S = 8.0  # the rules' PrimusRunStalled threshold in tests: above the tiny runs' gaps between log steps
INTERVAL_S = 1.0  # scrape and rule evaluation


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def _wait(ready: Callable[[], bool], process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")


class Server:
    def __init__(self, root: Path, name: str):
        self.root, self.name = root, name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def _spawn(self, command: list[str]) -> subprocess.Popen:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self.process

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class Pushgateway(Server):
    def __init__(self, root: Path):
        super().__init__(root, "pushgateway")

    def start(self) -> Pushgateway:
        process = self._spawn(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{self.port}",
                               f"--persistence.file={self.root / 'pushgateway.data'}", "--web.enable-admin-api",
                               "--log.level=warn"])
        _wait(lambda: urllib.request.urlopen(f"{self.url}/-/ready", timeout=1).status == 200, process, self.name,
              self.log)
        return self

    def groups(self) -> list[dict[str, Any]]:
        """Every group the gateway holds: its labels and, by metric name, its samples (labels and value)."""
        out = []
        for group in get_json(f"{self.url}/api/v1/metrics")["data"]:
            metrics = {name: [{"labels": m["labels"], "value": float(m["value"])} for m in family["metrics"]]
                       for name, family in group.items() if isinstance(family, dict) and "metrics" in family}
            out.append({"labels": group["labels"], "metrics": metrics})
        return out

    def group(self, **labels: str) -> dict[str, Any] | None:
        """The one group whose labels include ``labels``, or None."""
        found = [g for g in self.groups() if labels.items() <= g["labels"].items()]
        assert len(found) <= 1, found
        return found[0] if found else None


class Prometheus(Server):
    def __init__(self, root: Path, gateway: Pushgateway, rules: str):
        super().__init__(root, "prometheus")
        self.gateway = gateway
        (root / "rules.yml").write_text(rules)
        (root / "prometheus.yml").write_text(
            f"global: {{scrape_interval: {INTERVAL_S:g}s, scrape_timeout: {INTERVAL_S:g}s, "
            f"evaluation_interval: {INTERVAL_S:g}s}}\n"
            f"rule_files: ['{root / 'rules.yml'}']\n"
            "scrape_configs:\n"
            "  - job_name: pushgateway\n"
            "    honor_labels: true\n"  # the pushed job (the experiment) and the run's labels, not the scrape's
            f"    static_configs: [{{targets: ['127.0.0.1:{gateway.port}']}}]\n")

    def start(self) -> Prometheus:
        process = self._spawn(["prometheus", f"--config.file={self.root / 'prometheus.yml'}",
                               f"--storage.tsdb.path={self.root / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"])
        _wait(self._scraping, process, self.name, self.log)
        return self

    def _scraping(self) -> bool:
        targets = get_json(f"{self.url}/api/v1/targets")["data"]["activeTargets"]
        return any(t["health"] == "up" for t in targets)

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` gives now: [{"metric": labels, "value": [time, "text"]}]."""
        return get_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")["data"]["result"]

    def alerts(self, name: str, **labels: str) -> list[dict[str, Any]]:
        """The alerts ``name`` pending or firing now whose labels include ``labels``."""
        return [a for a in get_json(f"{self.url}/api/v1/alerts")["data"]["alerts"]
                if a["labels"]["alertname"] == name and labels.items() <= a["labels"].items()]
