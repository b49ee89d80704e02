"""`primus report RUN_DIR [RUN_DIR...] [-o report.png|report.html]`: loss, learning rate, tokens/s,
TFLOP/s and memory over steps from the runs' own journals (several runs overlaid), a summary table
(steps, final loss, mean throughput after warm-up, peak memory, goodput) and the runs' health alerts, each run
labelled with its own name. Needs no tracking server.

`primus report RUN_DIR... --format csv|json [-o FILE]`: one row per run instead (steps, final loss, median
tokens/s, TFLOP/s and MFU after warm-up, peak memory, wall time), on stdout or in FILE, for dashboards.

`primus report --baseline BASE_DIR [--max-regression-pct P] RUN_DIR...`: a regression gate instead. Each run
against the baseline on median tokens/s and TFLOP/s per GPU, seconds per step, goodput and the loss at the last
step both logged; exit 1 naming every figure worse by more than P % (default 5), for a nightly CI job."""

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
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="BASE_DIR",
        help="a run directory to compare each RUN_DIR with (a table, or the --format); exit 1 when a figure "
        "regressed beyond --max-regression-pct. e.g. --baseline output/nightly/20261201-020000",
    )
    parser.add_argument(
        "--max-regression-pct",
        type=float,
        default=None,
        metavar="P",
        help="with --baseline: how much worse than the baseline a figure may be, in percent (default 5), "
        "e.g. --max-regression-pct 10",
    )
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from primus.report import alert_lines, build_report, output_format, text_table, warmup_note, write_report

    if args.baseline is not None or args.max_regression_pct is not None:
        return _gate(args)
    try:
        if args.format is None:
            output_format(args.output or DEFAULT_OUTPUT)
        report = build_report(args.run_dirs)
    except ValueError as e:  # RunDirError too
        print(f"primus report: {e}", file=sys.stderr)
        return 2
    if args.format is not None:
        from primus.report.rows import format_rows

        _write(format_rows(report.runs, args.format), args.output)
        return 0
    print(text_table(report.summary))
    print(warmup_note(report.summary))
    for line in alert_lines(report.runs):
        print(line)
    if report.omitted:
        print(report.omitted_note())
    print(f"wrote {write_report(report, args.output or DEFAULT_OUTPUT)}")
    return 0


def _write(text: str, output: Path | None) -> None:
    """On stdout, or in ``output`` (its folder made)."""
    if output is None:
        sys.stdout.write(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")


def _gate(args: argparse.Namespace) -> int:
    from primus.report.gate import DEFAULT_MAX_REGRESSION_PCT, failure_line, formatted, judge
    from primus.report.run_data import load_run, run_labels

    pct = DEFAULT_MAX_REGRESSION_PCT if args.max_regression_pct is None else args.max_regression_pct
    if args.baseline is None:
        print(f"primus report: --max-regression-pct {pct:g} needs --baseline BASE_DIR to compare with", file=sys.stderr)
        return 2
    if not 0 <= pct < 100:
        print(f"primus report: --max-regression-pct {pct:g}: give a percentage from 0 to 100, e.g. 5", file=sys.stderr)
        return 2
    paths = [args.baseline, *args.run_dirs]
    try:
        baseline, *runs = [load_run(path, label) for path, label in zip(paths, run_labels(paths), strict=True)]
    except ValueError as e:  # RunDirError
        print(f"primus report: {e}", file=sys.stderr)
        return 2
    verdicts = [judge(baseline, run, pct) for run in runs]
    _write(formatted(baseline, verdicts, pct, args.format), args.output)
    failed = failure_line(verdicts, pct)
    if failed is not None:
        print(f"primus report: {failed}", file=sys.stderr)
        return 1
    print(f"primus report: no figure regressed beyond {pct:g} % of the baseline", file=sys.stderr)
    return 0
