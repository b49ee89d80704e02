"""Goodput in the report: each run's latest figures (``RunData.goodput``: the end's, or the last log step's for a
run still going or killed), for the CSV/JSON column and, on the HTML page, one stacked bar per run: where its wall
time went, every attempt together."""

from __future__ import annotations

import html
from collections.abc import Sequence

from primus.report.run_data import RunData
from primus.tracking.goodput.accounting import CHARGED, FRACTION, label

# one colour per category, in CHARGED's order: productive green, the badput in warm then grey tones
COLOURS = ("#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#c7c7c7")


def goodput_fraction(run: RunData) -> float | None:
    return run.goodput.get(FRACTION) if run.goodput else None


def bars_html(runs: Sequence[RunData]) -> str:
    """A section with one stacked bar per run that has goodput figures, and a legend; "" when none has."""
    rows = []
    for run in runs:
        figures = run.goodput
        total = sum(figures.get(name, 0.0) for name in CHARGED) if figures else 0.0
        if not figures or total <= 0:
            continue
        parts = "".join(
            f'<span style="width:{100 * figures[name] / total:.2f}%;background:{colour}" '
            f'title="{html.escape(label(name))}: {figures[name]:.1f} s"></span>'
            for name, colour in zip(CHARGED, COLOURS, strict=True)
            if figures.get(name, 0.0) > 0
        )
        rows.append(
            f"<tr><td>{html.escape(run.label)}</td><td>{100 * figures[FRACTION]:.1f}% of {total:.1f} s</td>"
            f'<td><div class="bar">{parts}</div></td></tr>'
        )
    if not rows:
        return ""
    legend = " ".join(
        f'<span class="key" style="background:{colour}"></span>{html.escape(label(name))}'
        for name, colour in zip(CHARGED, COLOURS, strict=True)
    )
    return (
        "<h2>goodput</h2>\n<table><thead><tr><th>run</th><th>productive</th><th>wall time, all attempts</th></tr>"
        f'</thead><tbody>{"".join(rows)}</tbody></table>\n<p class="note">{legend}</p>\n'
    )


STYLE = (
    ".bar{width:40em;display:flex}.bar span{height:1.4em}"
    ".key{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .8em}"
)
