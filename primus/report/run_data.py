"""What the report reads from one run directory: every metric series in its journal, its health alerts, its
backend and its warm-up setting. Nothing here talks to a tracker: the journal is the run's own record."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from primus.report.panels import Panel, pick_name
from primus.tracking.goodput.accounting import FRACTION, GOODPUT_EVENT, NAMES
from primus.tracking.journal.files import JOURNAL_DIR
from primus.tracking.journal.reader import has_journal, read_all
from primus.tracking.journal.records import BACKEND_TAG, EVENT, METRICS, Alert, event_of
from primus.tracking.tags.meta import RunMeta
from primus.upstreams.backends import metric_scale

# IntervalAverager's default and trainer_base.yaml's: used when the run's params do not say
DEFAULT_SKIP_ITERATIONS = 2


class RunDirError(ValueError):
    """A path given as a run directory that is not one."""


@dataclass(frozen=True)
class Point:
    step: int
    value: float
    segment: int  # which process wrote it: a restarted job goes on writing the same journal after a "start" record
    at: float  # when it was logged (its journal record's time), unix seconds


@dataclass(frozen=True)
class RunData:
    path: Path
    label: str
    backend: str | None
    skip_iterations: int  # log_avg_skip_iterations: warm-up iterations left out of averages
    points: dict[str, list[Point]]  # metric name -> its points in journal order
    alerts: list[Alert]  # its health alerts (stalled, nan, failed, ...) in journal order
    wall_time_s: float | None = None  # the time its processes ran: first to last record of each, summed
    goodput: dict[str, float] | None = None  # its latest goodput figures: the end's, else the last log step's

    def metric_for(self, panel: Panel) -> str | None:
        """The metric this run logged for ``panel`` (see ``panels``), or None."""
        return pick_name(panel, self.backend, self.points.keys())

    def series(self, name: str) -> tuple[list[int], list[float]]:
        """Steps and values of one metric in its panel's unit, one value per step: the last one written
        (a resumed run replays the steps after its checkpoint)."""
        factor = metric_scale(name)
        by_step = {p.step: p.value * factor for p in self.points.get(name, ())}
        steps = sorted(by_step)
        return steps, [by_step[s] for s in steps]


def load_run(path: Path, label: str | None = None) -> RunData:
    """Read ``path``'s journal (every segment, gzipped or not, or the single file of an older run directory);
    raise RunDirError naming the path and the fix when it has none."""
    if not has_journal(path):
        raise RunDirError(_not_a_run_dir(path))
    points: dict[str, list[Point]] = defaultdict(list)
    spans: dict[int, tuple[int, int]] = {}  # segment -> (first, last) record time, unix ms
    alerts = []
    goodput = None
    segment = 0
    for record in read_all(path):
        if record.kind == EVENT and record.data.get("event") == "start":
            segment += 1
        elif FRACTION in record.data and (record.kind == METRICS or record.data.get("event") == GOODPUT_EVENT):
            goodput = {name: float(record.data[name]) for name in NAMES if name in record.data}
        elif isinstance(alert := event_of(record), Alert):
            alerts.append(alert)
        if record.kind == METRICS:
            for name, value in record.data.items():
                points[name].append(Point(record.step, float(value), segment, record.ts_ms / 1000))
        first, _ = spans.get(segment, (record.ts_ms, record.ts_ms))
        spans[segment] = (first, record.ts_ms)
    meta = RunMeta.load(path) if (path / "meta.json").is_file() else RunMeta()
    skip = meta.params.get("log_avg_skip_iterations")
    return RunData(
        path=path,
        label=label or path.name,
        backend=meta.tags.get(BACKEND_TAG),
        skip_iterations=skip if isinstance(skip, int) else DEFAULT_SKIP_ITERATIONS,
        points=dict(points),
        wall_time_s=sum(last - first for first, last in spans.values()) / 1000 if spans else None,
        alerts=alerts,
        goodput=goodput,
    )


def _not_a_run_dir(path: Path) -> str:
    if not path.exists():
        return f"{path}: no such directory; pass a run directory (the folder holding {JOURNAL_DIR}/)"
    inside = sorted(p for p in path.iterdir() if p.is_dir() and has_journal(p)) if path.is_dir() else []
    if inside:
        shown = " ".join(str(p) for p in inside[-3:])
        return f"{path}: not a run directory (no {JOURNAL_DIR}/); it holds runs, pass one or more of them: {shown}"
    return (
        f"{path}: not a run directory (no {JOURNAL_DIR}/); pass the folder a tracked run wrote, "
        f"e.g. output/<exp_name>/<run_name>"
    )


def run_labels(paths: list[Path]) -> list[str]:
    """Short, distinct labels: each run's own name (``run_name``), with its folder's name when names repeat (two runs
    of one experiment named alike), else its whole path."""
    names = [run_name(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    labels = [
        f"{n} ({p.name})" if n != p.name else f"{p.parent.name}/{p.name}" for n, p in zip(names, paths, strict=True)
    ]
    return labels if len(set(labels)) == len(labels) else [str(p) for p in paths]


def run_name(path: Path) -> str:
    """The name the run was tracked under, as its trackers show it; where that is only its folder's name (a timestamp,
    as `primus train` names runs), with its experiment's in front; its folder's name where it kept neither."""
    if not (path / "meta.json").is_file():
        return path.name
    meta = RunMeta.load(path)
    name = meta.run_name or path.name
    return f"{meta.experiment_name}/{name}" if name == path.name and meta.experiment_name else name
