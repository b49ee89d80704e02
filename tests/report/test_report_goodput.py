"""Goodput in `primus report` (primus/report/goodput.py): a run directory written by two real tracked runs, one
after the other (two attempts), gives its last goodput figures to the CSV column and a stacked bar on the HTML page;
a run without goodput figures gets neither."""

from __future__ import annotations

import csv
import io
import re

import pytest

from primus.cli.main import main
from primus.report.goodput import bars_html
from primus.report.run_data import load_run
from primus.tracking.goodput.accounting import CHARGED, FRACTION, GOODPUT_EVENT, PRODUCTIVE
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import EVENT, METRICS, encode
from primus.tracking.run import start_run
from primus.tracking.settings.config import TrackingConfig


def bare_run(run_dir):
    """A journal from before goodput: no figures."""
    run_dir.mkdir(parents=True)
    lines = [(EVENT, 0, 1_000, {"event": "start"}), (METRICS, 1, 1_500, {"lm loss": 3.0})]
    (run_dir / "journal.jsonl").write_bytes(b"".join(encode(*line) for line in lines))


def two_attempts(run_dir):
    for attempt in range(2):
        run = start_run(TrackingConfig(run_dir=run_dir, delivery="thread", tags={"primus.backend": "megatron"}))
        for step in range(1 + 2 * attempt, 4 + 2 * attempt):
            run.log(step, {"lm loss": 4.0 - step / 10})
        run.finish()


def test_the_last_figures_in_the_csv_column_and_a_bar_per_run_on_the_page(tmp_path, capsys):
    two_attempts(tmp_path / "run")
    bare_run(tmp_path / "bare")
    # the end's figures, which the second attempt's end journaled after its last step's
    final = [r for r in read_all(tmp_path / "run") if PRODUCTIVE in r.data][-1].data
    assert final["event"] == GOODPUT_EVENT
    assert main(["report", str(tmp_path / "run"), str(tmp_path / "bare"), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert float(rows[0]["goodput_fraction"]) == final[FRACTION] and rows[1]["goodput_fraction"] == ""
    assert main(["report", str(tmp_path / "run"), str(tmp_path / "bare"), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    [bar] = re.findall(r'<div class="bar">(.*?)</div>', page)  # the bare run has none
    widths = [float(w) for w in re.findall(r"width:([0-9.]+)%", bar)]
    assert sum(widths) == pytest.approx(100, abs=0.05)
    assert f"{100 * final[FRACTION]:.1f}% of {sum(final[n] for n in CHARGED):.1f} s" in page


def test_no_section_without_figures(tmp_path):
    bare_run(tmp_path / "bare")
    assert bars_html([load_run(tmp_path / "bare")]) == ""
