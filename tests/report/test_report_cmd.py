"""`primus report` on bad input (clear errors, nothing written) and on a run that lacks some panels'
data (those panels are left out and the report says so)."""

from __future__ import annotations

from matplotlib.text import Text

from primus.cli.main import main
from primus.report import build_report
from primus.report.figure import render
from primus.tracking import TrackingConfig, start_run


def loss_only_run(run_dir):
    run = start_run(TrackingConfig(run_dir=run_dir, tags={"primus.backend": "megatron"}))
    for step in range(1, 4):
        run.log(step, {"lm loss": 5.0 - step, "learning-rate": 1e-3})
    run.finish()


def test_not_a_run_directory(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing"), "-o", str(tmp_path / "r.png")]) == 2
    assert f"{tmp_path / 'missing'}: no such directory" in capsys.readouterr().err
    loss_only_run(tmp_path / "exp" / "run-a")
    assert main(["report", str(tmp_path / "exp"), "-o", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert "not a run directory (no journal/)" in err and str(tmp_path / "exp" / "run-a") in err
    assert not (tmp_path / "r.png").exists()


def test_an_output_that_is_neither_png_nor_html(tmp_path, capsys):
    loss_only_run(tmp_path / "run")
    assert main(["report", str(tmp_path / "run"), "-o", str(tmp_path / "r.pdf")]) == 2
    assert "the report is a .png or an .html file" in capsys.readouterr().err
    assert not (tmp_path / "r.pdf").exists()


def test_panels_without_data_are_left_out_and_named(tmp_path, capsys):
    loss_only_run(tmp_path / "run")
    report = build_report([tmp_path / "run"])
    assert report.omitted == ["tokens/s per GPU", "TFLOP/s per GPU", "memory (GiB)"]
    figure = render(report, with_table=True)
    assert [ax.get_title() for ax in figure.axes if ax.get_title()] == ["loss", "learning rate"]
    assert any("no data, not shown: tokens/s per GPU, TFLOP/s per GPU, memory (GiB)" in t.get_text()
               for t in figure.findobj(Text))
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "run"), "-o", str(out)]) == 0
    assert "no data, not shown: tokens/s per GPU" in capsys.readouterr().out
    assert "no data, not shown: tokens/s per GPU" in out.read_text()


def test_the_runs_alerts_are_listed_on_the_console_and_in_the_page(tmp_path, capsys):
    import time

    from primus.tracking.journal.records import Alert, AlertKind

    run = start_run(TrackingConfig(run_dir=tmp_path / "run", tags={"primus.backend": "megatron"}))
    run.log(1, {"lm loss": 4.0})
    run.alert(Alert(AlertKind.STALLED, 1, "no step for 612 s after step 1 (allowed 600 s)", time.time()), notified=True)
    run.finish()
    assert main(["report", str(tmp_path / "run"), "-o", str(tmp_path / "r.html")]) == 0
    # labelled with its experiment (the default, primus) and its name, which is its folder's
    line = "alert primus/run iteration 1: stalled: no step for 612 s after step 1 (allowed 600 s)"
    assert line in capsys.readouterr().out.splitlines()
    assert f"<li>{line}</li>" in (tmp_path / "r.html").read_text()
