"""`primus report RUN_DIR [RUN_DIR...] [-o report.png|report.html]`: loss, learning rate, tokens/s,
TFLOP/s and memory over steps from the runs' own journals (several runs overlaid), a summary table
(steps, final loss, mean throughput after warm-up, peak memory) and the runs' health alerts. Needs no tracking
server.

`primus report RUN_DIR... --format csv|json [-o FILE]`: one row per run instead (steps, final loss, median
tokens/s, TFLOP/s and MFU after warm-up, peak memory, wall time), on stdout or in FILE, for dashboards."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_OUTPUT = Path("report.png")


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
        default=None,
        help="report.png (panels and table) or report.html (one self-contained page); "
        "default report.png, e.g. -o runs.html; with --format, the file for the rows (default stdout)",
    )
    parser.add_argument(
        "--format",
        choices=("csv", "json"),
        default=None,
        help="one row per run as CSV or JSON instead of the plots: run, path, backend, steps, final_loss, "
        "median_tokens_per_sec_per_gpu, median_tflops_per_gpu, median_mfu, peak_memory_gib, wall_time_s; "
        "e.g. --format csv -o runs.csv",
    )
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from primus.report import alert_lines, build_report, output_format, text_table, warmup_note, write_report

    try:
        if args.format is None:
            output_format(args.output or DEFAULT_OUTPUT)
        report = build_report(args.run_dirs)
    except ValueError as e:  # RunDirError too
        print(f"primus report: {e}", file=sys.stderr)
        return 2
    if args.format is not None:
        return _write_rows(report.runs, args.format, args.output)
    print(text_table(report.summary))
    print(warmup_note(report.summary))
    for line in alert_lines(report.runs):
        print(line)
    if report.omitted:
        print(report.omitted_note())
    print(f"wrote {write_report(report, args.output or DEFAULT_OUTPUT)}")
    return 0


def _write_rows(runs, fmt: str, output: Path | None) -> int:
    from primus.report.rows import format_rows

    text = format_rows(runs, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    return 0
