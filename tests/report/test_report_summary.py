"""The summary's mean throughput: the warm-up rule and the ratio of sums of perf.IntervalAverager, per
process of a restarted run; and what load_run reads from a journal with two processes in it."""

from __future__ import annotations

import json

import pytest

from primus.report.run_data import DEFAULT_SKIP_ITERATIONS, Point, load_run
from primus.report.summary import mean_after_warmup, summarize
from primus.tracking.journal.records import EVENT, METRICS, encode
from primus.tracking.measure.perf import IntervalAverager

TOKENS_PER_STEP = 4096.0


@pytest.mark.parametrize("skip", [0, 1, 2, 5])
def test_mean_matches_interval_averager(skip):
    # log steps 1, 2, 3, 5, 8, 9, 12 (intervals of 1-3 iterations) at varying tokens/s
    steps = [1, 2, 3, 5, 8, 9, 12]
    rates = [500.0, 2000.0, 2100.0, 1900.0, 2500.0, 800.0, 2200.0]
    averager = IntervalAverager(skip_iterations=skip, reset_interval=10**9)
    averager.start()  # the log step before the first point only starts the clock
    previous = 0
    for step, rate in zip(steps, rates, strict=True):
        n = step - previous
        averager.add(iterations=n, seconds=n * TOKENS_PER_STEP / rate, tokens=n * TOKENS_PER_STEP)
        previous = step
    expected = averager.averages(world_size=1)["perf/tokens_per_sec_per_gpu_avg"]
    points = [Point(step, rate, segment=1, at=step) for step, rate in zip(steps, rates, strict=True)]
    assert mean_after_warmup(points, skip, clock_start_entry=True) == pytest.approx(expected)


def test_each_process_warms_up_again_and_replayed_steps_count_once():
    # skip 2: each process's clock-start entry (no point) and its first point are warm-up
    first = [Point(s, r, 1, s) for s, r in ((1, 10.0), (2, 100.0), (3, 100.0), (4, 100.0))]
    # restarted from a checkpoint at step 3: step 4 is replayed and warm-up again; a repeated step counts once
    second = [Point(s, r, 2, s) for s, r in ((4, 1.0), (5, 100.0), (6, 100.0), (6, 5.0), (7, 100.0))]
    assert mean_after_warmup(first + second, skip_iterations=2, clock_start_entry=True) == pytest.approx(100.0)
    assert mean_after_warmup(first[:1], skip_iterations=2, clock_start_entry=True) is None  # only warm-up: no mean
    assert mean_after_warmup(first[:2], skip_iterations=2, clock_start_entry=True) == pytest.approx(100.0)
    # where the first point is the first log entry (TorchTitan, MaxText), two points per process are warm-up
    assert mean_after_warmup(first[:2], skip_iterations=2) is None
    assert mean_after_warmup(first + second, skip_iterations=2) == pytest.approx(100.0)


def _write_journal(run_dir, lines):
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_bytes(b"".join(encode(*line) for line in lines) + b'{"k":"m","s":9,"t"')


def test_load_run_reads_segments_and_the_backend(tmp_path):
    run_dir = tmp_path / "run"
    _write_journal(run_dir, [
        (EVENT, 0, 1, {"event": "start"}),
        (METRICS, 1, 2, {"lm loss": 7.0, "perf/tokens_per_sec_per_gpu": 5.0}),
        (METRICS, 2, 3, {"lm loss": 6.0, "perf/tokens_per_sec_per_gpu": 50.0}),
        (EVENT, 0, 4, {"event": "start", "resumed": True}),
        (METRICS, 2, 5, {"lm loss": 6.5}),  # replayed after the restart: the later value wins
        (METRICS, 3, 6, {"lm loss": 5.0, "perf/tokens_per_sec_per_gpu": 60.0}),
    ])  # ...and a torn last line, as a crash leaves it
    (run_dir / "meta.json").write_text(json.dumps({"params": {"log_avg_skip_iterations": 0},
                                                   "tags": {"primus.backend": "megatron"}}))
    run = load_run(run_dir)
    assert (run.backend, run.skip_iterations) == ("megatron", 0)
    assert run.series("lm loss") == ([1, 2, 3], [7.0, 6.5, 5.0])
    assert [p.segment for p in run.points["lm loss"]] == [1, 1, 2, 2]
    row = summarize(run)
    assert (row.steps, row.final_loss, row.peak_memory_gib, row.mean_tflops) == (3, 5.0, None, None)
    assert row.mean_tokens_per_sec == pytest.approx(3 / (1 / 5 + 1 / 50 + 1 / 60))


def test_load_run_without_meta_uses_the_default_warmup(tmp_path):
    _write_journal(tmp_path / "bare", [(METRICS, 1, 1, {"train/loss": 3.0})])
    run = load_run(tmp_path / "bare")
    assert (run.backend, run.skip_iterations) == (None, DEFAULT_SKIP_ITERATIONS)
    assert DEFAULT_SKIP_ITERATIONS == IntervalAverager().skip  # the trainer's default when nothing says
