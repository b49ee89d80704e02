"""Build a report from run directories (the data behind every panel and the summary table), and write
it (``write.py``) as a PNG or as an HTML page that embeds the PNG and the table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from primus.report.panels import PANELS
from primus.report.run_data import RunData, load_run, run_labels
from primus.report.summary import SummaryRow, summarize

FORMATS = (".png", ".html")


@dataclass(frozen=True)
class Line:
    name: str  # the metric plotted
    steps: list[int]
    values: list[float]  # in the panel's unit


@dataclass(frozen=True)
class Report:
    runs: list[RunData]
    panels: dict[str, dict[str, Line]]  # panel title -> run label -> its line; empty when no run has data
    summary: list[SummaryRow]

    @property
    def omitted(self) -> list[str]:
        return [title for title, lines in self.panels.items() if not lines]

    @property
    def title(self) -> str:
        return "primus report: " + ", ".join(run.label for run in self.runs)

    def omitted_note(self) -> str:
        return f"no data, not shown: {', '.join(self.omitted)}" if self.omitted else ""


def build_report(run_dirs: Sequence[Path]) -> Report:
    """Read every run; raise RunDirError for a path that is not a run directory."""
    paths = [Path(p) for p in run_dirs]
    runs = [load_run(path, label) for path, label in zip(paths, run_labels(paths), strict=True)]
    panels: dict[str, dict[str, Line]] = {}
    for panel in PANELS:
        panels[panel.title] = {}
        for run in runs:
            name = run.metric_for(panel)
            if name is not None:
                panels[panel.title][run.label] = Line(name, *run.series(name))
    return Report(runs, panels, [summarize(run) for run in runs])


def output_format(out: Path) -> str:
    """``.png`` or ``.html``; ValueError naming the path and the fix for anything else."""
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"-o {out}: the report is a .png or an .html file; name it e.g. report.png or report.html")
    return suffix
