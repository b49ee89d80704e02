"""`primus report RUN_DIR [RUN_DIR...] [-o report.png|report.html]`: loss, learning rate, tokens/s,
TFLOP/s and memory over steps from the runs' own journals (several runs overlaid), a summary table
(steps, final loss, mean throughput after warm-up, peak memory) and the runs' health alerts. Needs no tracking
server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("report", help="plot runs from their journals (PNG or HTML)", description=__doc__)
    parser.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="a run directory (it holds journal/), e.g. output/tiny_cpu/20261129-172708",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("report.png"),
        help="report.png (panels and table) or report.html (one self-contained page); "
        "default report.png, e.g. -o runs.html",
    )
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from primus.report import alert_lines, build_report, output_format, text_table, warmup_note, write_report

    try:
        output_format(args.output)
        report = build_report(args.run_dirs)
    except ValueError as e:  # RunDirError too
        print(f"primus report: {e}", file=sys.stderr)
        return 2
    print(text_table(report.summary))
    print(warmup_note(report.summary))
    for line in alert_lines(report.runs):
        print(line)
    if report.omitted:
        print(report.omitted_note())
    print(f"wrote {write_report(report, args.output)}")
    return 0
