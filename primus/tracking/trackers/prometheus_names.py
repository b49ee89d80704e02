"""What the run's figures are called in Prometheus, the one place that knows: the Pushgateway sink
(``prometheus.py``) writes these names, and the alerting rules and the Grafana dashboard (``primus monitoring``)
query them. A metric's name follows Prometheus's own rules: every run of characters a name may not hold becomes one
``_``, behind the ``primus_`` prefix (``lm loss`` -> ``primus_lm_loss``, ``throughput/tokens_per_s`` ->
``primus_throughput_tokens_per_s``)."""

from __future__ import annotations

import re

PREFIX = "primus_"
STEP = "primus_step"  # the latest step the run logged
# when upstream logged that step (unix seconds, the node's clock): the heartbeat a stall rule compares with time()
LAST_STEP_TIME = "primus_last_step_timestamp_seconds"
ALERTS = "primus_alerts_total"  # alerts the run has had, by label KIND
KIND = "kind"
STATUS = "primus_run_status"  # 1, with label STATUS_LABEL: RUNNING, then FINISHED, FAILED or KILLED at the end
STATUS_LABEL = "status"
# what groups a run's figures on the gateway (and labels every series of it), with the experiment as its job
JOB, RUN, BACKEND, HOST, RANK = "job", "run", "backend", "host", "rank"
GROUP_LABELS = (JOB, RUN, BACKEND, HOST)
OWN = frozenset({STEP, LAST_STEP_TIME, ALERTS, STATUS})  # what the sink computes: a scalar of the same name loses

_NOT_IN_A_NAME = re.compile(r"[^a-zA-Z0-9_]+")
_UNDERSCORES = re.compile(r"__+")


def metric_name(key: str) -> str | None:
    """The Prometheus name of the scalar ``key``; None when nothing of it may stand in a name."""
    body = _UNDERSCORES.sub("_", _NOT_IN_A_NAME.sub("_", key)).strip("_")
    return PREFIX + body if body else None
