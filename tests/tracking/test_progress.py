"""The progress figures' arithmetic: consumed counts as given (tokens = samples x sequence length), elapsed time
from the start, samples/s over the last interval, the ETA from the steps left and the step time over the last few
intervals, nothing that needs an interval at the first log step."""

from __future__ import annotations

import pytest

from primus.tracking.measure.names import SCHEMA
from primus.tracking.measure.progress import (
    AT_EVERY_LOG_STEP,
    CONSUMED_SAMPLES,
    CONSUMED_TOKENS,
    ELAPSED,
    ETA,
    FROM_THE_SECOND_LOG_STEP,
    SAMPLES_PER_S,
    Progress,
)

SEQ = 8


def test_the_first_log_step_has_the_counts_and_elapsed_time_only():
    progress = Progress(started=100.0)
    out = progress.at(10, 40, 103.5, seq_length=128, total_steps=20)
    assert out == {CONSUMED_SAMPLES: 40.0, CONSUMED_TOKENS: 5120.0, ELAPSED: 3.5}


def test_samples_per_second_over_the_last_interval_and_the_eta_over_the_window():
    progress = Progress(window=2, started=0.0)
    progress.at(1, 4, 1.0, seq_length=SEQ, total_steps=10)
    progress.at(2, 8, 2.0, seq_length=SEQ, total_steps=10)  # 1 s per step
    progress.at(3, 12, 5.0, seq_length=SEQ, total_steps=10)  # 3 s per step: the window of 2 intervals says 2 s
    # the window (steps 2..4): 4 s over 2 steps; the last interval: 4 samples in 1 s
    out = progress.at(4, 16, 6.0, seq_length=SEQ, total_steps=10)
    assert out[SAMPLES_PER_S] == pytest.approx(4.0)
    assert out[ETA] == pytest.approx(6 * 2.0)
    assert out[CONSUMED_TOKENS] == 16 * SEQ and out[ELAPSED] == 6.0


def test_no_eta_without_the_runs_length_and_none_past_its_end():
    progress = Progress(started=0.0)
    progress.at(1, 1, 1.0, seq_length=SEQ, total_steps=None)
    assert ETA not in progress.at(2, 2, 2.0, seq_length=SEQ, total_steps=None)
    assert progress.at(3, 3, 3.0, seq_length=SEQ, total_steps=2)[ETA] == 0.0


def test_steps_that_go_back_start_the_window_again():
    progress = Progress(started=0.0)
    progress.at(5, 5, 1.0, seq_length=SEQ, total_steps=10)
    progress.at(6, 6, 2.0, seq_length=SEQ, total_steps=10)
    again = progress.at(1, 1, 3.0, seq_length=SEQ, total_steps=10)  # a re-run from step 1
    assert set(again) == set(AT_EVERY_LOG_STEP)


def test_every_name_is_in_the_schema():
    assert {*AT_EVERY_LOG_STEP, *FROM_THE_SECOND_LOG_STEP} <= set(SCHEMA)
