"""`primus report --format csv|json`: one row per run, for regression dashboards. The figures are the summary
table's (``summary.py``) where they are the same; throughput, TFLOP/s and MFU are medians over the log intervals
after warm-up (robust to one slow step; the table's means are total work over total time), and the wall time is
the time the run's processes ran, from the journal's timestamps."""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from primus.report.goodput import goodput_fraction
from primus.report.panels import MFU, TFLOPS, TOKENS_PER_SEC, Panel
from primus.report.run_data import RunData
from primus.report.summary import first_log_starts_clock, log_intervals, summarize
from primus.upstreams.backends import metric_scale

FORMATS = ("csv", "json")
COLUMNS = (
    "run",  # the run's label (its folder's name)
    "path",
    "backend",
    "steps",  # the last step logged
    "final_loss",
    "median_tokens_per_sec_per_gpu",
    "median_tflops_per_gpu",
    "median_mfu",  # a fraction of the device's peak
    "peak_memory_gib",
    "wall_time_s",
    "goodput_fraction",  # goodput/productive_fraction at the run's end (or its last log step): all attempts together
)


def run_row(run: RunData) -> dict[str, Any]:
    summary = summarize(run)
    return dict(
        zip(
            COLUMNS,
            (
                run.label,
                str(run.path),
                run.backend,
                summary.steps,
                summary.final_loss,
                median_after_warmup(run, TOKENS_PER_SEC),
                median_after_warmup(run, TFLOPS),
                median_after_warmup(run, MFU),
                summary.peak_memory_gib,
                run.wall_time_s,
                goodput_fraction(run),
            ),
            strict=True,
        )
    )


def median_after_warmup(run: RunData, panel: Panel) -> float | None:
    name = run.metric_for(panel)
    if name is None:
        return None
    kept = log_intervals(run.points[name], run.skip_iterations, first_log_starts_clock(run.backend))
    return statistics.median(point.value for _, _, point in kept) * metric_scale(name) if kept else None


def format_rows(runs: Sequence[RunData], fmt: str) -> str:
    """The rows as CSV (a header, empty cells for what a run lacks) or a JSON list of objects (null)."""
    rows = [run_row(run) for run in runs]
    return json.dumps(rows, indent=1) + "\n" if fmt == "json" else csv_text(rows, COLUMNS)


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A header, then a line per row: its values of ``columns`` (a missing one empty, other keys left out)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
