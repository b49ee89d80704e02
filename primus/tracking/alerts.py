"""An alert: something about the run's health a person must hear of (``health.py`` finds most of them).

In the journal an alert is a lifecycle event, ``{"event": "alert", "kind", "iteration", "text", "notified"}``,
so ``primus tracking sync`` delivers it late and ``primus report`` lists it like any record. Each tracker shows
it its own way (MLflow: the tag ``primus.alert.<kind>`` and the ``health/alerts`` count; W&B: ``run.alert`` and
the same tag in the summary; TensorBoard: a text entry); the console line and the webhook come from the
delivery process (``health_watch.py``), once, when it is raised. ``notified`` says that already happened.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from enum import Enum
from typing import Any

from primus.redaction import redact_text
from primus.tracking.journal import EVENT, Record

ALERT_EVENT = "alert"
TAG_PREFIX = "primus.alert."
COUNT_METRIC = "health/alerts"


class AlertKind(str, Enum):
    STALLED = "stalled"
    RESUMED = "resumed"
    NAN = "nan"
    LOSS_SPIKE = "loss_spike"
    THROUGHPUT_DROP = "throughput_drop"
    FAILED = "failed"
    KILLED = "killed"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Alert:
    kind: str
    iteration: int
    text: str
    time_s: float  # unix time it was raised

    @property
    def tag(self) -> str:
        return f"{TAG_PREFIX}{self.kind}"

    @property
    def tag_value(self) -> str:
        return f"iteration {self.iteration}: {self.text}"

    def console_line(self, run_name: str) -> str:
        return f"[primus] ALERT {self.kind} run {run_name} iteration {self.iteration}: {self.text}"

    def event(self, notified: bool) -> dict[str, Any]:
        """The fields of its journal event (``MetricsHub.event(ALERT_EVENT, **fields)``); the text redacted."""
        return {
            "kind": str(self.kind),
            "iteration": self.iteration,
            "text": redact_text(self.text),
            "notified": notified,
        }

    def body(self, run_name: str, experiment: str) -> dict[str, Any]:
        """The webhook's JSON: Slack's ``text`` and the fields a program reads."""
        return {
            "text": self.console_line(run_name),
            "kind": str(self.kind),
            "run": run_name,
            "experiment": experiment,
            "iteration": self.iteration,
            "host": socket.gethostname(),
            "time": self.time_s,
        }


def alert_of(record: Record) -> Alert | None:
    """The alert a journal record holds, if it holds one."""
    if record.kind != EVENT or record.data.get("event") != ALERT_EVENT:
        return None
    d = record.data
    return Alert(str(d.get("kind")), int(d.get("iteration", 0)), str(d.get("text", "")), record.ts_ms / 1000.0)
