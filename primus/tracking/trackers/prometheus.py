"""Prometheus sink: the run's latest figures pushed to a Pushgateway, for the cluster's own monitoring (alerting
rules and a dashboard: ``primus monitoring``). Prometheus keeps no history from a push, so each push (PUT) replaces
the run's group with the latest value of every scalar, the step and when upstream logged it, the alert counts and
``primus_run_status`` (RUNNING; at the end FINISHED, FAILED or KILLED). The group is the experiment as ``job``, with
``run``, ``backend`` and ``host`` (and ``rank`` for a rank's own run): one per run on each node.

It pushes from its delivery worker, at most once per ``push_interval_s`` (``Sink.min_interval_s``): a push that
fails is retried with the worker's back-off and said once, and the next one carries the latest figures, so a
gateway that was down is up to date again as soon as it answers. The figures are kept in the run directory with
the cursor (at each flush): a delivery process started again goes on from them. With a port, the node's delivery
process also serves them on ``/metrics`` (``prometheus_endpoint.py``). Names: ``prometheus_names.py``."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from primus.redaction import redact_text
from primus.tracking.journal.records import (
    BACKEND_TAG,
    RANK_TAG,
    Alert,
    AlertKind,
    Metrics,
    Record,
    RunStatus,
    SinkName,
    event_of,
)
from primus.tracking.settings.config import resolved
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable
from primus.tracking.trackers import prometheus_names as names
from primus.tracking.trackers.context import SinkContext
from primus.tracking.trackers.prometheus_endpoint import ENDPOINT

log = logging.getLogger("primus.tracking")


@dataclass(frozen=True)
class Figures:
    """The run's latest figures, as they go out in a push."""

    values: Mapping[str, float] = field(default_factory=dict)  # Prometheus name -> latest value
    step: int | None = None
    step_time_s: float | None = None  # when upstream logged ``step``
    alerts: Mapping[str, int] = field(default_factory=dict)  # kind -> how many

    def folded(self, records: Sequence[Record]) -> Figures:
        """These figures with ``records`` (in journal order) applied; self is left as it was."""
        values, alerts, step, step_time_s = dict(self.values), dict(self.alerts), self.step, self.step_time_s
        for r in records:
            match event_of(r):
                case Metrics(figures):
                    values.update(scalars(figures))
                    step, step_time_s = r.step, r.ts_ms / 1000.0
                case Alert(kind=kind):
                    alerts[kind] = alerts.get(kind, 0) + 1
        return replace(self, values=values, alerts=alerts, step=step, step_time_s=step_time_s)


def scalars(data: Mapping[str, Any]) -> dict[str, float]:
    """Each number of a step's metrics under its Prometheus name (NaN and infinities kept: a rule looks for them)."""
    found = {}
    for key, value in data.items():
        name = names.metric_name(key)
        if name is not None and name not in names.OWN and isinstance(value, (int, float)):
            found[name] = float(value)
    return found


class PrometheusSink(Sink):
    name = SinkName.PROMETHEUS
    # the figures, alert counts included, are saved at a flush; the cursor then, so they agree
    durability = Durability.ON_FLUSH
    synced = False  # the next push carries the latest figures; a gateway keeps no history to fill in later

    def __init__(self, context: SinkContext):
        self.context = context
        self.cfg = resolved(context.config.prometheus, "prometheus")
        self.min_interval_s = resolved(self.cfg.push_interval_s, "prometheus.push_interval_s")  # type: ignore[misc]
        self.job = context.experiment_name
        self.group = group_of(context.run_name, context.tags)
        self.figures = Figures()
        self.status: str = RunStatus.RUNNING
        self._push: Callable[[Figures, str], None] | None = None
        where = redact_text(self.cfg.pushgateway) if self.cfg.pushgateway else f":{self.cfg.port}"  # kept in files
        self._target = "/".join((where, self.job, *self.group.values()))

    def open(self) -> str:
        try:
            from prometheus_client.exposition import push_to_gateway
        except ImportError as e:
            raise SinkUnavailable(
                f"prometheus_client is not importable ({e}): pip install 'primus-tracking[prometheus]', or unset "
                "PRIMUS_PROMETHEUS_PUSHGATEWAY and PRIMUS_PROMETHEUS_PORT (primus_prometheus_pushgateway, _port)"
            ) from e
        if self.cfg.pushgateway:
            opener, gateway = ReusedOpener(), self.cfg.pushgateway

            def push(figures: Figures, status: str) -> None:
                collector = Snapshot(figures, status)
                push_to_gateway(gateway, self.job, collector, self.group, self.cfg.timeout_s, opener)

            self._push = push
        if self.cfg.port is not None:
            self._serve(self.cfg.port)
        saved = self.context.saved()  # the figures up to the cursor the worker resumes from
        if saved.get("target") == self._target and "figures" in saved:
            self.figures = Figures(**saved["figures"])
        return self._target

    def _serve(self, port: int) -> None:
        labels = {names.JOB: self.job, **self.group}
        try:
            ENDPOINT.serve(port, self._target, lambda: Snapshot(self.figures, self.status, labels))
        except OSError as e:
            fix = f"set PRIMUS_PROMETHEUS_PORT (primus_prometheus_port) to a free port: {port} cannot be served ({e})"
            if self._push is None:
                raise SinkUnavailable(fix) from e
            log.warning("primus tracking: no /metrics endpoint, pushes only: %s", fix)

    def write(self, records: Sequence[Record]) -> None:
        figures = self.figures.folded(records)
        if figures != self.figures and self._push is not None:
            self._push(figures, RunStatus.RUNNING)
        self.figures = figures  # only once pushed: a retry folds the same records into the figures before them

    def flush(self) -> None:
        self.context.save(target=self._target, figures=asdict(self.figures))

    def close(self, status: str, complete: bool) -> None:
        self.status = status
        self.flush()
        if self._push is not None:
            self._push(self.figures, status)


def group_of(run_name: str, tags: Mapping[str, str]) -> dict[str, str]:
    """The run's grouping key on the gateway (its job, the experiment, apart): run, backend, host, and the rank of a
    rank's own run (TorchTitan's save_for_all_ranks)."""
    group = {names.RUN: run_name, names.BACKEND: tags.get(BACKEND_TAG, "unknown"), names.HOST: socket.gethostname()}
    if RANK_TAG in tags:
        group[names.RANK] = tags[RANK_TAG]
    return group


class Snapshot:
    """The figures as prometheus_client's collector, every name a gauge (the gateway refuses a name whose type
    differs between groups); ``labels`` on every sample (the endpoint's: the gateway adds a push's from its group)."""

    def __init__(self, figures: Figures, status: str, labels: Mapping[str, str] | None = None):
        self.figures, self.status, self.labels = figures, status, dict(labels or {})

    def collect(self) -> list[Any]:
        from prometheus_client.core import GaugeMetricFamily

        def gauge(name: str, doc: str, samples: Sequence[tuple[Sequence[str], float]], *more: str) -> Any:
            family = GaugeMetricFamily(name, doc, labels=[*self.labels, *more])
            for values, value in samples:
                family.add_metric([*self.labels.values(), *values], value)
            return family

        f = self.figures
        out = [gauge(name, "", [((), value)]) for name, value in sorted(f.values.items())]
        if f.step is not None and f.step_time_s is not None:
            out.append(gauge(names.STEP, "the latest step the run logged", [((), f.step)]))
            out.append(gauge(names.LAST_STEP_TIME, "when upstream logged it", [((), f.step_time_s)]))
        # every kind from 0, so that a rule or a panel sees the first one come (increase() needs a value before it)
        kinds = {**{str(k): 0 for k in AlertKind}, **f.alerts}
        out.append(
            gauge(names.ALERTS, "alerts the run has had", [((k,), n) for k, n in sorted(kinds.items())], names.KIND)
        )
        out.append(gauge(names.STATUS, "the run's status", [((str(self.status),), 1)], names.STATUS_LABEL))
        return out


class ReusedOpener:
    """prometheus_client's push handler with one urllib opener for every push: its default builds one per push,
    whose SSL context loads the CA store, ~22 ms of CPU each time even for http:// (0.6 ms this way). A refusal
    raises with the gateway's own reason (an HTTPError says only its code)."""

    def __init__(self) -> None:
        self.opener = urllib.request.build_opener()

    def __call__(
        self, url: str, method: str, timeout: float | None, headers: Sequence[tuple[str, str]], data: bytes
    ) -> Callable[[], None]:
        def handle() -> None:
            request = urllib.request.Request(url, data=data, headers=dict(headers), method=method)
            try:
                with self.opener.open(request, timeout=timeout):
                    pass
            except urllib.error.HTTPError as e:
                raise OSError(f"the Pushgateway refused the push: {e.code} {e.read()[:300]!r}") from None

        return handle
