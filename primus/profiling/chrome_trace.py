"""Reads a torch profiler Chrome trace (``export_chrome_trace``: plain JSON or ``.json.gz``) and sums
it up: per-op and per-kernel time, per profiler step, host vs device.

Host ops (``cpu_op`` and ``record_function`` annotations) nest on their thread, so an op's *self* time
is its duration minus its direct children's; summed over ops, self time counts each host microsecond
once. Device events (kernels, copies, memsets) run asynchronously on streams; each is charged to the
host op that launched it through the ``External id`` the profiler gives both. A step is upstream's
``ProfilerStep#N`` span: an op belongs to the step its start falls in, a kernel to its launching op's
step (or, unlinked, to the step its own start falls in)."""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST_CATEGORIES = frozenset({"cpu_op", "user_annotation"})
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
STEP_PREFIX = "ProfilerStep#"
HOST, DEVICE = "host", "device"


class NotATrace(ValueError):
    """A file that is JSON but not a Chrome trace (an execution trace, a memory snapshot, ...)."""


@dataclass
class OpStats:
    where: str  # HOST or DEVICE
    name: str
    count: int = 0
    total_us: float = 0.0  # inclusive of nested ops (host); the events' durations (device)
    self_us: float = 0.0  # exclusive of nested host ops; equal to total_us on the device
    max_us: float = 0.0
    device_us: float = 0.0  # host ops: device time of the kernels they launched themselves

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


@dataclass
class StepStats:
    step: int
    duration_us: float
    host_self_us: float = 0.0
    device_us: float = 0.0


@dataclass
class TraceSummary:
    steps: list[StepStats]
    ops: list[OpStats]  # host ops by self time, then device events by time, largest first
    span_us: float  # first event start to last event end
    host_self_us: float = 0.0
    device_us: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)  # the trace's own fields (rank info, devices)

    @property
    def profiled_us(self) -> float:
        """The steps' total when the trace has profiler steps, else the whole span."""
        return sum(s.duration_us for s in self.steps) or self.span_us


@dataclass
class _Event:
    name: str
    pid: Any
    tid: Any
    ts: float
    dur: float
    external_id: Any
    child_us: float = 0.0

    @property
    def end(self) -> float:
        return self.ts + self.dur


def load_trace(path: Path) -> dict[str, Any]:
    """The trace's JSON object; NotATrace when it has no ``traceEvents``."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise NotATrace(f"{path}: no traceEvents list")
    return data


def summarize(trace: dict[str, Any]) -> TraceSummary:
    host, device, steps = _split(trace["traceEvents"])
    _charge_children(host)
    step_of = _step_finder(steps)
    stats: dict[tuple[str, str], OpStats] = {}
    by_external_id: dict[Any, _Event] = {}
    step_stats = [StepStats(_step_number(s.name), s.dur) for s in steps]
    for e in host:
        op = stats.setdefault((HOST, e.name), OpStats(HOST, e.name))
        _add(op, e.dur, e.dur - e.child_us)
        if e.external_id is not None:
            by_external_id[e.external_id] = e
        i = step_of(e)
        if i is not None:
            step_stats[i].host_self_us += e.dur - e.child_us
    for e in device:
        _add(stats.setdefault((DEVICE, e.name), OpStats(DEVICE, e.name)), e.dur, e.dur)
        launcher = by_external_id.get(e.external_id) if e.external_id is not None else None
        if launcher is not None:
            stats[(HOST, launcher.name)].device_us += e.dur
        i = step_of(launcher or e)
        if i is not None:
            step_stats[i].device_us += e.dur
    timed = [*host, *device, *steps]
    span = max(e.end for e in timed) - min(e.ts for e in timed) if timed else 0.0
    ops = sorted(stats.values(), key=lambda o: (o.where != HOST, -o.self_us, o.name))
    metadata = {k: v for k, v in trace.items() if k != "traceEvents"}
    return TraceSummary(
        step_stats,
        ops,
        span,
        host_self_us=sum(o.self_us for o in ops if o.where == HOST),
        device_us=sum(o.total_us for o in ops if o.where == DEVICE),
        metadata=metadata,
    )


def _split(events: list[Any]) -> tuple[list[_Event], list[_Event], list[_Event]]:
    host, device, steps = [], [], []
    for raw in events:
        if not isinstance(raw, dict) or raw.get("ph") != "X" or "ts" not in raw or "dur" not in raw:
            continue
        category, name = raw.get("cat"), str(raw.get("name", ""))
        if category not in HOST_CATEGORIES and category not in DEVICE_CATEGORIES:
            continue
        args = raw["args"] if isinstance(raw.get("args"), dict) else {}
        event = _Event(
            name, raw.get("pid"), raw.get("tid"), float(raw["ts"]), float(raw["dur"]), args.get("External id")
        )
        if category in DEVICE_CATEGORIES:
            device.append(event)
        elif name.startswith(STEP_PREFIX):
            steps.append(event)
        else:
            host.append(event)
    steps.sort(key=lambda e: e.ts)
    return host, device, steps


def _charge_children(host: list[_Event]) -> None:
    """Give each host op the time of its direct children (same thread, inside its span)."""
    threads: dict[tuple[Any, Any], list[_Event]] = defaultdict(list)
    for e in host:
        threads[(e.pid, e.tid)].append(e)
    for events in threads.values():
        events.sort(key=lambda e: (e.ts, -e.dur))
        stack: list[_Event] = []
        for e in events:
            while stack and stack[-1].end <= e.ts:
                stack.pop()
            if stack:
                stack[-1].child_us += e.dur
            stack.append(e)


def _step_finder(steps: list[_Event]) -> Callable[[_Event], int | None]:
    """The index of the step (sorted, not overlapping) whose span holds an event's start, if any."""
    starts = [s.ts for s in steps]

    def step_of(e: _Event) -> int | None:
        i = bisect.bisect_right(starts, e.ts) - 1
        return i if i >= 0 and e.ts < steps[i].end else None

    return step_of


def _step_number(name: str) -> int:
    digits = name.removeprefix(STEP_PREFIX)
    return int(digits) if digits.isdigit() else -1


def _add(op: OpStats, total_us: float, self_us: float) -> None:
    op.count += 1
    op.total_us += total_us
    op.self_us += self_us
    op.max_us = max(op.max_us, total_us)
