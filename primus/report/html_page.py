"""The HTML report: one self-contained page (the figure embedded as a base64 PNG, the summary table as
HTML), readable offline, in a browser on a login node or attached to a pull request."""

from __future__ import annotations

import base64
import html
import io

from matplotlib.figure import Figure

from primus.report import goodput
from primus.report.build import Report
from primus.report.table import TABLE_HEADER, alert_lines, table_rows, warmup_note

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}.note{color:#666}" + goodput.STYLE
)


def html_page(report: Report, figure: Figure) -> str:
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=100)
    image = base64.b64encode(png.getvalue()).decode("ascii")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in TABLE_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table_rows(report.summary)
    )
    runs = "".join(
        f"<li>{html.escape(run.label)}: <code>{html.escape(str(run.path))}</code></li>" for run in report.runs
    )
    omitted = f'<p class="note">{html.escape(report.omitted_note())}</p>' if report.omitted else ""
    alerts = "".join(f"<li>{html.escape(line)}</li>" for line in alert_lines(report.runs))
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(report.title)}</title>'
        f"<style>{_STYLE}</style></head><body>\n<h1>{html.escape(report.title)}</h1>\n<ul>{runs}</ul>\n"
        f'<img alt="metrics over steps" src="data:image/png;base64,{image}">\n{omitted}\n'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
        f'<p class="note">{html.escape(warmup_note(report.summary))}</p>\n'
        + goodput.bars_html(report.runs)
        + (f"<h2>alerts</h2><ul>{alerts}</ul>\n" if alerts else "")
        + "</body></html>\n"
    )
