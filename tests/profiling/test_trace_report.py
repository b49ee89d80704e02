"""The trace report on real torch profiler traces, made here on CPU: one report per trace, the numbers
taken back from the trace itself, nothing written without traces, unreadable files skipped."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from primus.profiling.chrome_trace import load_trace, summarize
from primus.profiling.trace_report import render_markdown, write_trace_report

MATMULS_PER_STEP = 3
ACTIVE_STEPS = 2


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    """<traces>/torch_profile/rank-0.json.gz as Megatron writes it, and a plain-JSON copy elsewhere."""
    root = tmp_path_factory.mktemp("traces")
    gz = root / "torch_profile" / "rank-0.json.gz"
    gz.parent.mkdir()
    a = torch.randn(32, 32)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=ACTIVE_STEPS, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(gz))) as prof:
        for _ in range(1 + ACTIVE_STEPS):
            with record_function("block"):
                for _ in range(MATMULS_PER_STEP):
                    (a @ a).relu()
            prof.step()
    plain = root / "iteration_2" / "rank0_trace.json"
    plain.parent.mkdir()
    with gzip.open(gz, "rt") as f:
        plain.write_text(f.read())
    (root / "iteration_2" / "chakra.json").write_text('{"nodes": []}')  # JSON, but no Chrome trace
    return root


def raw_events(path: Path) -> list[dict]:
    return json.loads(path.read_text())["traceEvents"]


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open() as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def test_one_report_per_trace_with_numbers_from_the_trace(traces, tmp_path):
    written = write_trace_report(traces, tmp_path / "reports")
    assert sorted(p.name for p in written) == [
        "iteration_2__rank0_trace.trace_report.csv", "iteration_2__rank0_trace.trace_report.md",
        "torch_profile__rank-0.trace_report.csv", "torch_profile__rank-0.trace_report.md"]
    events = raw_events(traces / "iteration_2" / "rank0_trace.json")
    steps = {e["name"]: e["dur"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert len(steps) == ACTIVE_STEPS
    markdown = (tmp_path / "reports" / "iteration_2__rank0_trace.trace_report.md").read_text()
    assert markdown.startswith("# Trace report: iteration_2/rank0_trace.json\n")
    assert f"| profiled time | {sum(steps.values()) / 1e3:.3f} |" in markdown
    for name, dur in steps.items():
        assert f"| {name.removeprefix('ProfilerStep#')} | {dur / 1e3:.3f} |" in markdown

    table = rows(tmp_path / "reports" / "iteration_2__rank0_trace.trace_report.csv")
    mm = [e for e in events if e.get("name") == "aten::mm"]
    assert table["aten::mm"]["count"] == str(len(mm)) == str(MATMULS_PER_STEP * ACTIVE_STEPS)
    assert float(table["aten::mm"]["total_ms"]) == pytest.approx(sum(e["dur"] for e in mm) / 1e3, abs=1e-3)
    block = table["block"]  # a record_function: its self time leaves out the matmuls inside it
    assert block["where"] == "host" and int(block["count"]) == ACTIVE_STEPS
    assert float(block["self_ms"]) < float(block["total_ms"])
    assert "ProfilerStep#1" not in table  # steps are the denominator, not ops
    # the gzip'd original gives the same report
    assert (tmp_path / "reports" / "torch_profile__rank-0.trace_report.csv").read_text() == \
        (tmp_path / "reports" / "iteration_2__rank0_trace.trace_report.csv").read_text()


def test_no_traces_writes_nothing(tmp_path):
    (tmp_path / "traces").mkdir()
    assert write_trace_report(tmp_path / "traces", tmp_path / "reports") == []
    assert write_trace_report(tmp_path / "absent", tmp_path / "reports") == []
    assert not (tmp_path / "reports").exists()


def test_an_unreadable_trace_is_skipped_and_said(traces, tmp_path, primus_caplog):
    shutil.copytree(traces / "torch_profile", tmp_path / "traces" / "good")
    broken = tmp_path / "traces" / "broken" / "rank-1.json.gz"
    broken.parent.mkdir()
    broken.write_bytes(gzip.compress(b'{"traceEvents": [')[:-4])  # cut short, as by a killed job
    written = write_trace_report(tmp_path / "traces", tmp_path / "reports")
    assert [p.name for p in written] == ["good__rank-0.trace_report.md", "good__rank-0.trace_report.csv"]
    assert any(f"skipping {broken}" in r.getMessage() for r in primus_caplog.records)


def test_device_time_has_its_own_table_and_a_cpu_trace_says_it_has_none(traces):
    from test_chrome_trace import TRACE  # hand-written GPU events: none can be recorded on this box

    markdown = render_markdown(summarize(TRACE), "rank-3.json", "rank-3.trace_report.csv")
    assert "Torch profiler trace `rank-3.json`, rank 3." in markdown
    assert "| device time (kernels, copies) | 0.096 (60.0 %) |" in markdown
    assert "| `aten::addmm` | 3 | 0.060 | 0.060 | 0.020 | 0.030 | 0.090 | 37.5 % |" in markdown
    assert "## Top 2 of 2 device kernels and copies by time" in markdown
    assert "| `gemm_kernel` | 2 | 0.090 | 0.045 | 0.080 | 56.2 % |" in markdown
    cpu = render_markdown(summarize(load_trace(traces / "torch_profile" / "rank-0.json.gz")), "x", "x.csv")
    assert "| device time (kernels, copies) | none in this trace (host only) |" in cpu and "device kernels" not in cpu
