"""One summary row per run: steps, final loss, mean throughput after warm-up, peak memory, goodput."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from primus.report.goodput import goodput_fraction
from primus.report.panels import LOSS, MEMORY, PANELS, TFLOPS, TOKENS_PER_SEC, Panel
from primus.report.run_data import Point, RunData
from primus.upstreams import backends


@dataclass(frozen=True)
class SummaryRow:
    label: str
    backend: str | None
    steps: int | None  # the last step any panel's metric was logged at
    final_loss: float | None
    mean_tokens_per_sec: float | None  # per GPU, log intervals after warm-up
    mean_tflops: float | None  # per GPU, log intervals after warm-up
    peak_memory_gib: float | None
    goodput_fraction: float | None  # productive time over wall time, every attempt together
    skip_iterations: int


def log_intervals(
    points: Sequence[Point], skip_iterations: int, clock_start_entry: bool = False
) -> list[tuple[int, Point | None, Point]]:
    """``(iterations, previous point, point)`` of each log interval of a metric after warm-up, by the rule of
    ``perf.IntervalAverager``: the first ``skip_iterations`` log entries of each process (journal segment)
    are left out, counting, with ``clock_start_entry``, the entry before its first point that only started
    the trainer's clock. An interval runs from the previous point of the same process; a process's first point
    counts as one iteration and has no previous point (where its interval began is not in the journal)."""
    kept = []
    seen: dict[int, tuple[int, Point | None]] = {}  # segment -> (log entries so far, its last point)
    for point in points:
        entries, previous = seen.get(point.segment, (int(clock_start_entry), None))
        n = point.step - (previous.step if previous is not None else point.step - 1)
        if n <= 0:
            continue  # a replayed or repeated step is not a new log entry
        entries += 1
        seen[point.segment] = (entries, point)
        if entries > skip_iterations:
            kept.append((n, previous, point))
    return kept


def mean_after_warmup(points: Sequence[Point], skip_iterations: int, clock_start_entry: bool = False) -> float | None:
    """The mean of a rate over the run's log intervals after warm-up (``log_intervals``). Weighting each
    interval's rate by its iterations over the rate (its time, up to the constant tokens per step) gives total
    work over total time: the ratio of sums ``IntervalAverager`` computes, not the arithmetic mean of the rates."""
    intervals = log_intervals(points, skip_iterations, clock_start_entry)
    kept = [(n, point.value) for n, _, point in intervals if point.value > 0]
    seconds = sum(n / rate for n, rate in kept)  # a zero rate has no time to weigh it by
    return sum(n for n, _ in kept) / seconds if seconds else None


def summarize(run: RunData) -> SummaryRow:
    name = {panel.title: run.metric_for(panel) for panel in PANELS}

    def mean_rate(panel: Panel) -> float | None:
        metric = name[panel.title]
        return (
            mean_after_warmup(run.points[metric], run.skip_iterations, first_log_starts_clock(run.backend))
            if metric
            else None
        )

    loss, memory = name[LOSS.title], name[MEMORY.title]
    steps = [p.step for metric in name.values() if metric for p in run.points[metric]]
    return SummaryRow(
        label=run.label,
        backend=run.backend,
        steps=max(steps) if steps else None,
        final_loss=run.series(loss)[1][-1] if loss else None,
        mean_tokens_per_sec=mean_rate(TOKENS_PER_SEC),
        mean_tflops=mean_rate(TFLOPS),
        peak_memory_gib=max(run.series(memory)[1]) if memory else None,
        goodput_fraction=goodput_fraction(run),
        skip_iterations=run.skip_iterations,
    )


def first_log_starts_clock(backend: str | None) -> bool:
    """Whether the backend's first log step in a process is a log entry with no rate (Megatron's session);
    elsewhere the first point is the first log entry."""
    return backend in backends.names() and backends.backend_named(backend).first_log_starts_clock
