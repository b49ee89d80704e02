"""The report's figure: one panel per quantity with every run overlaid, (for a PNG report) the summary table under
the panels, and under everything the notes (panels left out for lack of data, the warm-up rule), in a row of their
own so the layout keeps them clear of the table.

Drawn on a bare ``Figure`` with the Agg canvas: no pyplot, no GUI backend, nothing global."""

from __future__ import annotations

import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from primus.report.build import Report
from primus.report.table import TABLE_HEADER, table_rows, warmup_note

COLUMNS = 2
PANEL_SIZE = (6.0, 3.6)  # inches
TABLE_ROW_HEIGHT = 0.3
NOTE_LINE_HEIGHT = 0.2


def render(report: Report, *, with_table: bool) -> Figure:
    shown = [title for title in report.panels if report.panels[title]]
    rows = max(1, math.ceil(len(shown) / COLUMNS))
    table_height = TABLE_ROW_HEIGHT * (len(report.summary) + 2) if with_table else 0.0
    notes = [n for n in [report.omitted_note()] + ([warmup_note(report.summary)] if with_table else []) if n]
    notes_height = NOTE_LINE_HEIGHT * len(notes)
    width, height = PANEL_SIZE[0] * COLUMNS, PANEL_SIZE[1] * rows + table_height + notes_height + 0.6
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    heights = [PANEL_SIZE[1]] * rows + ([table_height] if with_table else []) + ([notes_height] if notes else [])
    grid = fig.add_gridspec(len(heights), COLUMNS, height_ratios=heights)
    for i, title in enumerate(shown):
        ax = fig.add_subplot(grid[i // COLUMNS, i % COLUMNS])
        ax.set_title(title)
        ax.set_xlabel("step")
        names = []
        for index, run in enumerate(report.runs):  # one colour per run in every panel
            line = report.panels[title].get(run.label)
            if line is not None:
                ax.plot(
                    line.steps,
                    line.values,
                    marker="." if len(line.steps) < 30 else None,
                    label=run.label,
                    color=f"C{index % 10}",
                )
                names.append(line.name)
        ax.set_ylabel(", ".join(dict.fromkeys(names)))
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(report.runs) > 1:
            ax.legend(fontsize="small")
    if not shown:
        fig.add_subplot(grid[0, :]).set_axis_off()
    if with_table:
        ax = fig.add_subplot(grid[rows, :])
        ax.set_axis_off()
        table = ax.table(cellText=table_rows(report.summary), colLabels=TABLE_HEADER, loc="center", cellLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(8)
    if notes:
        ax = fig.add_subplot(grid[len(heights) - 1, :])
        ax.set_axis_off()
        ax.text(0.0, 1.0, "\n".join(notes), fontsize="small", color="dimgray", va="top", transform=ax.transAxes)
    fig.suptitle(report.title, fontsize="medium")
    return fig
