"""Write a built report as a PNG (panels and table) or an HTML page; matplotlib is imported only here."""

from __future__ import annotations

from pathlib import Path

from primus.report.build import Report, output_format


def write_report(report: Report, out: Path) -> Path:
    """Write ``out`` as a PNG (panels and table) or an HTML page (the PNG embedded, the table as HTML)."""
    from primus.report.figure import render  # matplotlib: only when a report is drawn

    suffix = output_format(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        render(report, with_table=True).savefig(out, dpi=100)
    else:
        from primus.report.html_page import html_page

        out.write_text(html_page(report, render(report, with_table=False)), encoding="utf-8")
    return out
