"""What the report shows of each run: its own name (not its folder's timestamp), its goodput in the table of the PNG
and the console too, and the notes under the table clear of it."""

from __future__ import annotations

from matplotlib.text import Text

from primus.report import build_report
from primus.report.figure import render
from primus.report.table import TABLE_HEADER, table_rows
from primus.tracking import TrackingConfig, start_run


def tracked(run_dir, run_name: str | None, experiment: str | None = None) -> None:
    run = start_run(TrackingConfig(run_dir=run_dir, run_name=run_name, experiment_name=experiment,
                                   tags={"primus.backend": "megatron"}))
    for step in range(1, 4):
        run.log(step, {"lm loss": 5.0 - step, "learning-rate": 1e-3})
    run.finish()


def test_runs_are_labelled_by_their_own_names_and_told_apart_by_folder_when_alike(tmp_path):
    tracked(tmp_path / "20261201-010101", "llama-baseline")
    tracked(tmp_path / "20261202-020202", "llama-fp8")
    tracked(tmp_path / "20261203-030303", "llama-fp8")
    report = build_report([tmp_path / "20261201-010101", tmp_path / "20261202-020202"])
    assert [run.label for run in report.runs] == ["llama-baseline", "llama-fp8"]
    alike = build_report([tmp_path / "20261202-020202", tmp_path / "20261203-030303"])
    assert [run.label for run in alike.runs] == ["llama-fp8 (20261202-020202)", "llama-fp8 (20261203-030303)"]
    tracked(tmp_path / "20261204-040404", None, "tiny_cpu")  # named by its folder, as `primus train` names runs
    assert build_report([tmp_path / "20261204-040404"]).runs[0].label == "tiny_cpu/20261204-040404"


def test_the_table_has_each_runs_goodput(tmp_path):
    tracked(tmp_path / "run", "one")
    report = build_report([tmp_path / "run"])
    [row] = table_rows(report.summary)
    goodput = row[TABLE_HEADER.index("goodput")]
    assert goodput.endswith(" %") and 0.0 <= float(goodput.removesuffix(" %")) <= 100.0


def test_the_notes_sit_under_the_table_clear_of_it(tmp_path):
    tracked(tmp_path / "run", "one")
    figure = render(build_report([tmp_path / "run"]), with_table=True)
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    [table] = [t for ax in figure.axes for t in ax.tables]
    [notes] = [t for t in figure.findobj(Text) if t.get_text().startswith("no data, not shown")]
    table_box, notes_box = table.get_window_extent(renderer), notes.get_window_extent(renderer)
    assert notes_box.y1 <= table_box.y0, (notes_box, table_box)  # display coordinates: y grows upwards
