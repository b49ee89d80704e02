"""The trace-analysis report ``mlflow_upload_tracelens_report`` uploads: for every torch profiler trace
of the run, ``<name>.trace_report.md`` (summary, profiler steps, top ops and kernels) and
``<name>.trace_report.csv`` (every op and kernel).

The spec names AMD's TraceLens. It is not installable from a package registry (the PyPI name
``tracelens`` is an unrelated agent-evaluation tool), so this report covers the core of what TraceLens
gives from the same traces: time per op and kernel, host vs device, per step."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from primus.log import get_logger
from primus.profiling.chrome_trace import DEVICE, HOST, NotATrace, OpStats, TraceSummary, load_trace, summarize
from primus.redaction import redact_text

log = get_logger("primus.profiling")

TRACE_SUFFIXES = (".json", ".json.gz")
REPORT_SUFFIX = ".trace_report"
TOP_N = 25
CSV_COLUMNS = ("where", "name", "count", "total_ms", "self_ms", "mean_ms", "max_ms", "device_ms", "pct_of_profiled")


def write_trace_report(traces_dir: Path, out_dir: Path) -> list[Path]:
    """Report on every trace under ``traces_dir`` into ``out_dir``; returns the files written ([] and
    nothing written when there is no trace). A file that cannot be read is skipped with a warning."""
    written: list[Path] = []
    for path in find_traces(traces_dir):
        try:
            summary = summarize(load_trace(path))
        except NotATrace:
            continue  # e.g. a Chakra execution trace beside the profiler's
        except (OSError, EOFError, ValueError) as e:  # truncated gzip, invalid JSON
            log.warning("trace report: skipping %s: %s", path, e)
            continue
        source = path.relative_to(traces_dir).as_posix()
        base = _flat_name(source) + REPORT_SUFFIX
        markdown, table = out_dir / f"{base}.md", out_dir / f"{base}.csv"
        out_dir.mkdir(parents=True, exist_ok=True)
        markdown.write_text(redact_text(render_markdown(summary, source, table.name)), encoding="utf-8")
        table.write_text(redact_text(render_csv(summary)), encoding="utf-8")
        written += [markdown, table]
    return written


def find_traces(traces_dir: Path) -> list[Path]:
    if not traces_dir.is_dir():
        return []
    return sorted(p for p in traces_dir.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))


def render_markdown(summary: TraceSummary, source: str, csv_name: str) -> str:
    profiled = summary.profiled_us
    steps = summary.steps
    lines = [
        f"# Trace report: {source}",
        "",
        f"Torch profiler trace `{source}`{_rank(summary)}. Times in ms; shares are of the profiled time "
        f"({'the profiler steps' if steps else 'the whole trace: it has no profiler steps'}). "
        "Host self time excludes nested ops; device time is summed over streams.",
        "",
        "| | |",
        "|---|---|",
        f"| profiled steps | {len(steps)}{_step_range(summary)} |",
        f"| profiled time | {_ms(profiled)} |",
        f"| host op time (self) | {_ms(summary.host_self_us)} ({_pct(summary.host_self_us, profiled)}) |",
        f"| device time (kernels, copies) | {_device_total(summary, profiled)} |",
        "",
    ]
    if steps:
        lines += ["## Profiler steps", "", "| step | duration | host ops (self) | device |", "|---:|---:|---:|---:|"]
        lines += [f"| {s.step} | {_ms(s.duration_us)} | {_ms(s.host_self_us)} | {_ms(s.device_us)} |" for s in steps]
        lines.append("")
    host = [o for o in summary.ops if o.where == HOST]
    lines += [
        f"## Top {min(TOP_N, len(host))} of {len(host)} host ops by self time",
        "",
        "| op | count | total | self | mean | max | device | % profiled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_host_row(o, profiled) for o in host[:TOP_N]]
    device = [o for o in summary.ops if o.where == DEVICE]
    if device:
        lines += [
            "",
            f"## Top {min(TOP_N, len(device))} of {len(device)} device kernels and copies by time",
            "",
            "| kernel | count | total | mean | max | % profiled |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [_device_row(o, profiled) for o in device[:TOP_N]]
    lines += ["", f"Every op and kernel: `{csv_name}`.", ""]
    return "\n".join(lines)


def render_csv(summary: TraceSummary) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    profiled = summary.profiled_us
    for o in summary.ops:
        writer.writerow(
            [
                o.where,
                o.name,
                o.count,
                *(f"{us / 1e3:.4f}" for us in (o.total_us, o.self_us, o.mean_us, o.max_us, o.device_us)),
                f"{100 * o.self_us / profiled:.2f}" if profiled else "",
            ]
        )
    return out.getvalue()


def _host_row(o: OpStats, profiled: float) -> str:
    return (
        f"| {_cell(o.name)} | {o.count} | {_ms(o.total_us)} | {_ms(o.self_us)} | {_ms(o.mean_us)} "
        f"| {_ms(o.max_us)} | {_ms(o.device_us)} | {_pct(o.self_us, profiled)} |"
    )


def _device_row(o: OpStats, profiled: float) -> str:
    return (
        f"| {_cell(o.name)} | {o.count} | {_ms(o.total_us)} | {_ms(o.mean_us)} | {_ms(o.max_us)} "
        f"| {_pct(o.total_us, profiled)} |"
    )


def _device_total(summary: TraceSummary, profiled: float) -> str:
    if not any(o.where == DEVICE for o in summary.ops):
        return "none in this trace (host only)"
    return f"{_ms(summary.device_us)} ({_pct(summary.device_us, profiled)})"


def _rank(summary: TraceSummary) -> str:
    info = summary.metadata.get("distributedInfo")
    return f", rank {info['rank']}" if isinstance(info, dict) and "rank" in info else ""


def _step_range(summary: TraceSummary) -> str:
    numbers = sorted(s.step for s in summary.steps)
    if not numbers:
        return ""
    return f" (#{numbers[0]})" if len(numbers) == 1 else f" (#{numbers[0]}–#{numbers[-1]})"


def _flat_name(source: str) -> str:
    """``iteration_10/rank0_trace.json`` -> ``iteration_10__rank0_trace``: one flat, safe file name per trace."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", re.sub(r"\.json(\.gz)?$", "", source).replace("/", "__"))


def _cell(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _ms(us: float) -> str:
    return f"{us / 1e3:.3f}"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "–"
