"""The summary table as text cells, shared by the PNG, the HTML page and the console."""

from __future__ import annotations

from collections.abc import Sequence

from primus.report.run_data import RunData
from primus.report.summary import SummaryRow

TABLE_HEADER = (
    "run",
    "backend",
    "steps",
    "final loss",
    "mean tokens/s/GPU",
    "mean TFLOP/s/GPU",
    "peak memory GiB",
    "goodput",
)


def _cell(value: float | int | str | None, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def table_rows(summary: Sequence[SummaryRow]) -> list[list[str]]:
    return [
        [
            row.label,
            _cell(row.backend),
            _cell(row.steps),
            _cell(row.final_loss),
            _cell(row.mean_tokens_per_sec),
            _cell(row.mean_tflops),
            _cell(row.peak_memory_gib, 3),
            "—" if row.goodput_fraction is None else f"{100 * row.goodput_fraction:.1f} %",
        ]
        for row in summary
    ]


def warmup_note(summary: Sequence[SummaryRow]) -> str:
    skips = sorted({row.skip_iterations for row in summary})
    shown = ", ".join(str(s) for s in skips) or "0"
    return f"means leave out each process's first {shown} log entries (log_avg_skip_iterations)"


def text_table(summary: Sequence[SummaryRow]) -> str:
    """The table for a terminal."""
    return padded([list(TABLE_HEADER), *table_rows(summary)])


def padded(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells for a terminal: columns padded to their widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def alert_lines(runs: Sequence[RunData]) -> list[str]:
    """One line per health alert of each run (none when no run had one)."""
    return [f"alert {run.label} iteration {a.iteration}: {a.kind}: {a.text}" for run in runs for a in run.alerts]
