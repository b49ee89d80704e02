"""`primus report --format csv|json` (primus/report/rows.py): one row per run, its figures exact from a journal
written here — medians after each process's warm-up, MFU in the same unit on every backend, the wall time of
every process — on stdout as CSV or in a file as JSON, with what a run lacks left empty."""

from __future__ import annotations

import csv
import io
import json

from primus.cli.main import main
from primus.report.rows import COLUMNS
from primus.tracking.journal.records import EVENT, METRICS, encode

TPS = "perf/tokens_per_sec_per_gpu"


def write_run(run_dir, backend, lines, skip=1):
    run_dir.mkdir(parents=True)
    (run_dir / "journal.jsonl").write_bytes(b"".join(encode(*line) for line in lines))
    (run_dir / "meta.json").write_text(json.dumps({"params": {"log_avg_skip_iterations": skip},
                                                   "tags": {"primus.backend": backend}}))


def titan_run(run_dir):
    # two processes (a restart at step 3); skip 1: each process's first point is warm-up
    write_run(run_dir, "torchtitan", [
        (EVENT, 0, 10_000, {"event": "start"}),
        (METRICS, 1, 11_000, {"loss_metrics/global_avg_loss": 9.0, "throughput(tps)": 1.0, "mfu(%)": 1.0}),
        (METRICS, 2, 12_000, {"loss_metrics/global_avg_loss": 8.0, "throughput(tps)": 100.0, "mfu(%)": 40.0}),
        (METRICS, 3, 13_000, {"loss_metrics/global_avg_loss": 7.0, "throughput(tps)": 300.0, "mfu(%)": 50.0}),
        (EVENT, 0, 20_000, {"event": "start", "resumed": True}),
        (METRICS, 3, 21_500, {"loss_metrics/global_avg_loss": 7.5, "throughput(tps)": 2.0, "mfu(%)": 2.0}),
        (METRICS, 4, 22_500, {"loss_metrics/global_avg_loss": 6.0, "throughput(tps)": 200.0, "mfu(%)": 45.0,
                              "memory/max_reserved(GiB)": 3.5, "goodput/productive_fraction": 0.25}),
    ])


def test_one_csv_row_per_run_on_stdout(tmp_path, capsys):
    titan_run(tmp_path / "titan")
    write_run(tmp_path / "bare", "megatron", [(EVENT, 0, 1_000, {"event": "start"}),
                                              (METRICS, 1, 1_500, {"lm loss": 3.0})])
    assert main(["report", str(tmp_path / "titan"), str(tmp_path / "bare"), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == {
        "run": "titan", "path": str(tmp_path / "titan"), "backend": "torchtitan", "steps": "4", "final_loss": "6.0",
        "median_tokens_per_sec_per_gpu": "200.0",  # of 100, 300, 200: the warm-up points 1 and 2 left out
        "median_tflops_per_gpu": "", "median_mfu": "0.45", "peak_memory_gib": "3.5",
        "wall_time_s": "5.5",  # 10 s to 13 s, then 20 s to 22.5 s
        "goodput_fraction": "0.25",
    }
    assert (rows[1]["run"], rows[1]["steps"], rows[1]["final_loss"], rows[1]["median_tokens_per_sec_per_gpu"],
            rows[1]["wall_time_s"], rows[1]["goodput_fraction"]) == ("bare", "1", "3.0", "", "0.5", "")
    assert list(rows[0]) == list(COLUMNS)


def test_json_rows_in_a_file_and_nothing_drawn(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the default report.png would go
    titan_run(tmp_path / "titan")
    out = tmp_path / "out" / "runs.json"
    assert main(["report", str(tmp_path / "titan"), "--format", "json", "-o", str(out)]) == 0
    [row] = json.loads(out.read_text())
    assert (row["median_mfu"], row["median_tflops_per_gpu"], row["steps"]) == (0.45, None, 4)
    assert capsys.readouterr().out == "" and not (tmp_path / "report.png").exists()


def test_a_bad_run_directory_writes_no_rows(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing"), "--format", "csv"]) == 2
    captured = capsys.readouterr()
    assert "no such directory" in captured.err and captured.out == ""
