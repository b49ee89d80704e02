"""`primus report` on a real tiny Megatron run: the PNG and the HTML page are written, every panel plots
exactly what the journal holds, the summary agrees with what the trainer itself computed, and two runs
(the real one and a TorchTitan-named run written through the tracking core) are overlaid."""

from __future__ import annotations

import base64
import csv
import io
import re
import statistics
import subprocess
from pathlib import Path

import pytest
from matplotlib.image import imread
from report_support import PRIMUS, TRAIN_ITERS, journal_metrics

from primus.report import build_report, write_report
from primus.report.figure import render
from primus.tracking import TrackingConfig, start_run

pytestmark = pytest.mark.slow

GIB = 1 << 30
PANEL_TITLES = ["loss", "learning rate", "tokens/s per GPU", "TFLOP/s per GPU", "memory (GiB)"]
# panel -> the Megatron metric it must plot, and its scale to the panel's unit
MEGATRON_SOURCES = {"loss": ("lm loss", 1), "learning rate": ("learning-rate", 1),
                    "tokens/s per GPU": ("perf/tokens_per_sec_per_gpu", 1),
                    "TFLOP/s per GPU": ("perf/tflops_per_gpu", 1), "memory (GiB)": ("mem-max-allocated-bytes", 1 / GIB)}


def megatron_label(run_dir: Path) -> str:
    """`primus train` names its run by its folder (a timestamp): the report puts its experiment in front."""
    return f"report/{run_dir.name}"


def test_report_of_a_real_run_plots_the_journal(megatron_run_dir, tmp_path):
    journal = journal_metrics(megatron_run_dir)
    report = build_report([megatron_run_dir])
    label = megatron_label(megatron_run_dir)
    assert report.omitted == []
    for title, (name, scale) in MEGATRON_SOURCES.items():
        line = report.panels[title][label]
        assert line.name == name
        assert dict(zip(line.steps, line.values, strict=True)) == pytest.approx(
            {s: v * scale for s, v in journal[name].items()})
    assert report.panels["loss"][label].steps == list(range(1, TRAIN_ITERS + 1))

    figure = render(report, with_table=True)
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == PANEL_TITLES
    for ax in panels:
        name, scale = MEGATRON_SOURCES[ax.get_title()]
        (drawn,) = ax.get_lines()
        assert dict(zip(drawn.get_xdata(), drawn.get_ydata(), strict=True)) == pytest.approx(
            {s: v * scale for s, v in journal[name].items()})

    (row,) = report.summary
    assert row.steps == TRAIN_ITERS
    assert row.final_loss == pytest.approx(journal["lm loss"][TRAIN_ITERS])
    # the trainer's own average (IntervalAverager, same warm-up rule, no reset within 4 steps) at the last step
    assert row.mean_tokens_per_sec == pytest.approx(journal["perf/tokens_per_sec_per_gpu_avg"][TRAIN_ITERS])
    assert row.mean_tflops == pytest.approx(journal["perf/tflops_per_gpu_avg"][TRAIN_ITERS])
    assert row.peak_memory_gib == pytest.approx(max(journal["mem-max-allocated-bytes"].values()) / GIB)


def test_primus_report_command_writes_a_png(megatron_run_dir, tmp_path):
    out = tmp_path / "report.png"
    done = subprocess.run([PRIMUS, "report", str(megatron_run_dir), "-o", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    pixels = imread(out)
    assert pixels.shape[0] > 1000 and pixels.shape[1] > 1000
    assert pixels[..., :3].std() > 0.05  # something is drawn, not a blank page
    header, row = done.stdout.splitlines()[:2]
    assert header.split()[:4] == ["run", "backend", "steps", "final"]
    assert row.split()[:3] == [megatron_label(megatron_run_dir), "megatron", str(TRAIN_ITERS)]
    assert f"wrote {out}" in done.stdout


def torchtitan_named_run(run_dir: Path, steps: int) -> None:
    """A run that logs TorchTitan's upstream names (components/metrics.py, lr_scheduler.get_metrics),
    written through the real tracking core (hub -> journal) with the tag TorchTitan's session sets."""
    run = start_run(TrackingConfig(run_dir=run_dir, tags={"primus.backend": "torchtitan"}))
    for step in range(1, steps + 1):
        run.log(step, {"loss_metrics/global_avg_loss": 8.0 - step / 10, "lr/AdamW": 1e-3 * step / steps,
                       "throughput(tps)": 1000.0 + step, "tflops": 0.5, "memory/max_reserved(GiB)": 1.5})
    run.finish()


def test_report_compares_two_runs_in_html(megatron_run_dir, tmp_path):
    other = tmp_path / "titan-run"
    torchtitan_named_run(other, steps=6)
    report = build_report([megatron_run_dir, other])
    mine, theirs = megatron_label(megatron_run_dir), "primus/titan-run"  # the default experiment's, named by its folder
    for title in PANEL_TITLES:
        assert set(report.panels[title]) == {mine, theirs}
    assert report.panels["loss"][theirs].name == "loss_metrics/global_avg_loss"
    assert report.panels["learning rate"][theirs].name == "lr/AdamW"
    assert report.panels["memory (GiB)"][theirs].values == [1.5] * 6
    figure = render(report, with_table=False)
    for ax in (ax for ax in figure.axes if ax.get_title()):
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [mine, theirs]

    out = write_report(report, tmp_path / "compare.html")
    page = out.read_text()
    image = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert imread(io.BytesIO(base64.b64decode(image))).shape[0] > 500
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert cells[:3] == [mine, "megatron", str(TRAIN_ITERS)]
    assert cells[8:11] == [theirs, "torchtitan", "6"]  # a row is 8 cells: the goodput column is the last
    # TorchTitan's tokens/s after the 2 warm-up iterations: steps 3..6, each weighted by its time
    expected = 4 / sum(1 / (1000.0 + s) for s in range(3, 7))
    assert report.summary[1].mean_tokens_per_sec == pytest.approx(expected)
    assert cells[12] == f"{expected:.4g}"


def test_csv_row_of_a_real_run_is_the_journal_s(megatron_run_dir):
    done = subprocess.run([PRIMUS, "report", str(megatron_run_dir), "--format", "csv"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [row] = list(csv.DictReader(io.StringIO(done.stdout)))
    journal = journal_metrics(megatron_run_dir)
    assert (row["backend"], int(row["steps"])) == ("megatron", TRAIN_ITERS)
    assert float(row["final_loss"]) == journal["lm loss"][TRAIN_ITERS]
    # log entries 1 (the clock's start) and 2 are warm-up (log_avg_skip_iterations 2): steps 3 and 4 remain
    for column, name in (("median_tokens_per_sec_per_gpu", "perf/tokens_per_sec_per_gpu"),
                         ("median_tflops_per_gpu", "perf/tflops_per_gpu")):
        assert float(row[column]) == pytest.approx(statistics.median(journal[name][s] for s in (3, 4)))
    assert float(row["peak_memory_gib"]) == pytest.approx(max(journal["mem-max-allocated-bytes"].values()) / GIB)
    assert 0 < float(row["wall_time_s"]) < 300
