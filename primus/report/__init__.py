"""`primus report`: plots and a summary table for one run or several, from their journals alone.

API::

    from primus.report import build_report, write_report

    report = build_report([Path("output/tiny_cpu/20261129-172708"), ...])  # RunDirError: not a run dir
    report.panels["loss"]["20261129-172708"]  # Line(name="lm loss", steps=[...], values=[...])
    report.omitted                            # panel titles no run has data for (not drawn)
    report.summary                            # one SummaryRow per run
    write_report(report, Path("report.html")) # or .png; ValueError for another suffix

Which metric a panel plots on each backend: ``primus.report.panels`` (also in docs/metrics.md). One row per run as
CSV or JSON (``primus report --format``): ``primus.report.rows.format_rows(report.runs, "csv")``.
"""

from primus.report.build import Line, Report, build_report, output_format
from primus.report.run_data import RunDirError
from primus.report.summary import SummaryRow
from primus.report.table import alert_lines, text_table, warmup_note
from primus.report.write import write_report

__all__ = [
    "Line",
    "alert_lines",
    "Report",
    "RunDirError",
    "SummaryRow",
    "build_report",
    "output_format",
    "text_table",
    "warmup_note",
    "write_report",
]
