"""The journal's vocabulary, the bottom of the tracking core: a ``Record`` and its JSON line (``{"k": kind, "s": step,
"t": unix_ms, "d": data}``, ``"o": [sink, ...]`` when it is for some sinks only), and the events that sinks, the
health watch, goodput and ``primus report`` read from it: the run's status and its end, alerts, checkpoints saved
and loaded, and the expected pauses (``busy``). Every reader decodes a record's event here (``event_of``), once,
and dispatches on its type, not on a parser per feature.
docs/tracking-internals.md says what each event's fields mean.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from primus.redaction import redact_text

METRICS, TEXT, EVENT = "m", "x", "e"
START_EVENT, END_EVENT = "start", "end"  # an attempt's start (run.py); the run's end, with its status
RANK_HOSTS = "rank_hosts"  # {"hosts": [host of rank 0, ...]}: once, where the ranks' figures are gathered
Logged = tuple[int, Mapping[str, Any], Sequence[str] | None]  # (step, metrics, only): what a ``log_later`` gives


@dataclass(frozen=True, slots=True)
class Record:
    kind: str
    step: int
    ts_ms: int
    data: Mapping[str, Any]
    end: int  # journal offset just past this record: a sink that handled it resumes from here
    only: tuple[str, ...] | None = None  # the sinks this record is for (by Sink.name); None: all

    def is_for(self, sink: str) -> bool:
        return self.only is None or sink in self.only


def encode(kind: str, step: int, ts_ms: int, data: Mapping[str, Any], only: tuple[str, ...] | None = None) -> bytes:
    obj = {"k": kind, "s": step, "t": ts_ms, "d": data}
    if only is not None:
        obj["o"] = only
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes, end: int) -> Record:
    """One journal line as a Record ending at ``end``; ValueError, KeyError or TypeError when it is torn."""
    obj = json.loads(line)
    only = tuple(obj["o"]) if "o" in obj else None
    return Record(obj["k"], int(obj["s"]), int(obj["t"]), obj["d"], end, only)


if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # the core runs on 3.10, which has no StrEnum

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return self.value


# each compares equal to, and is written to JSON and the journal as, its plain string (plugin sinks keep plain strings)
class RunStatus(StrEnum):
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


ENDED = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED)  # what a run may finish with


class SinkName(StrEnum):
    TENSORBOARD = "tensorboard"
    WANDB = "wandb"
    MLFLOW = "mlflow"
    COMET = "comet"
    ONE_LOGGER = "one_logger"
    OTLP = "otlp"  # an OpenTelemetry collector (OTLP/HTTP)
    PROMETHEUS = "prometheus"


# -- alerts: what a person must hear of about the run's health (``health/`` finds most), an event
# {"event": "alert", "kind", "iteration", "text", "notified"} (docs/tracking-internals.md#alerts)
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
    DELIVERY_RESTARTED = "delivery_restarted"  # the delivery process died and was started again
    NO_PROGRESS = "no_progress"  # attempts in a row died without a new step or checkpoint (goodput/attempts.py)
    STRAGGLER = "straggler"  # the same rank the slowest, far above the median, on most recent log steps
    STRAGGLER_RESOLVED = "straggler_resolved"

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


# -- checkpoints (``checkpoints/``) and expected pauses
SAVE_START, SAVED, LOADED = "checkpoint_save_start", "checkpoint_saved", "checkpoint_loaded"
# an expected pause in steps begins or ends: {"what": "checkpoint save" | "evaluation", "on": bool}
# (health/detectors.py, goodput/accounting.py), and "after_step": N where step N's log comes after the pause began
# (MaxText logs a step once the next is handed over): a log step ends the pause only past it
BUSY_EVENT = "busy"
RESUMED_FROM_TAG = "primus.resumed_from"
BACKEND_TAG = "primus.backend"  # the run's backend: Primus's name of the trainer
RANK_TAG = "primus.rank"  # a rank's own run (every rank tracking into its own): which rank it is
WANDB_ARTIFACT_TYPE = "model"  # Megatron's; the W&B sink gives every backend's checkpoints this type


@dataclass(frozen=True)
class CheckpointSaved:
    iteration: int
    path: str
    artifact: str
    alias: str
    seconds: float | None = None
    bytes: int | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    wandb_pointer: str | None = None

    @property
    def uri(self) -> str:
        """W&B's reference: ``file://`` and an absolute path for a local checkpoint, the URI itself otherwise."""
        return self.path if "://" in self.path else f"file://{Path(self.path).resolve()}"

    def manifest(self, ts_ms: int) -> dict[str, Any]:
        """What MLflow keeps of it (``checkpoints/<alias>.json``)."""
        return {
            "iteration": self.iteration,
            "path": self.path,
            "seconds": self.seconds,
            "bytes": self.bytes,
            "saved_at_ms": ts_ms,
        }

    def describe(self) -> str:
        """One line for TensorBoard's text."""
        seconds = "" if self.seconds is None else f", {self.seconds} s"
        size = "" if self.bytes is None else f", {self.bytes} bytes"
        return f"iteration {self.iteration}: {self.path}{seconds}{size}"


@dataclass(frozen=True)
class CheckpointLoaded:
    path: str
    iteration: int | None = None
    wandb_artifact: str | None = None
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Metrics:
    values: Mapping[str, Any]  # a step's figures (plain floats)


@dataclass(frozen=True, slots=True)
class Text:
    tag: str
    text: str


@dataclass(frozen=True, slots=True)
class Busy:
    """An expected pause in steps begins (``on``) or ends (``BUSY_EVENT``)."""

    what: str
    on: bool
    after_step: int | None = None


@dataclass(frozen=True, slots=True)
class NamedEvent:
    """Any other event by its name (start, end, ``SAVE_START``, ``RANK_HOSTS``, goodput, a later release's)."""

    name: str
    fields: Mapping[str, Any]


JournalEvent = Metrics | Text | Alert | CheckpointSaved | CheckpointLoaded | Busy | NamedEvent


def event_of(record: Record) -> JournalEvent:
    """The record's event, decoded here once for whoever reads it: sinks and features ``match`` on its type."""
    d = record.data
    if record.kind == METRICS:
        return Metrics(d)
    if record.kind == TEXT:
        return Text(d["tag"], d["text"])
    name = d.get("event")
    if name == ALERT_EVENT:
        return Alert(str(d.get("kind")), int(d.get("iteration", 0)), str(d.get("text", "")), record.ts_ms / 1000.0)
    if name in (SAVED, LOADED):
        cls: type[CheckpointSaved | CheckpointLoaded] = CheckpointSaved if name == SAVED else CheckpointLoaded
        names = {f.name for f in fields(cls)}  # fields a later release adds are left out, not an error
        try:
            return cls(**{k: v for k, v in d.items() if k in names})
        except TypeError:  # one it needs is missing: the event by its name only
            return NamedEvent(name, d)
    if name == BUSY_EVENT:
        return Busy(str(d.get("what")), bool(d.get("on")), d.get("after_step"))
    return NamedEvent(str(name), d)


def ends_pause(step: int, after_step: int | None) -> bool:
    """Whether a log step ends the expected pause begun after training step ``after_step`` (None: any step does)."""
    return after_step is None or step > after_step
