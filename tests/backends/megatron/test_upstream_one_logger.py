"""Unit tests of the object behind upstream's One-Logger callbacks on Megatron (upstream_one_logger.py): a logged
step's figures wait for the step's end and go with its record, at the step upstream logged them at; figures
outside a step go out at once; a step that fails still journals its figures. The integration with upstream's
one_logger_utils, MLflow and nv-one-logger is test_megatron_one_logger.py's."""

import pytest
from test_tracking_summary_writer import RecordingRun, make_writer

from primus.backends.megatron.session import MegatronTracking
from primus.backends.megatron.upstream_one_logger import UpstreamOneLogger

NAMES = ("mlflow", "one_logger")


class Logged:
    """What went to the run at once, from an object whose last logged step is ``iteration``."""

    def __init__(self, iteration: int = 0):
        self.iteration = iteration
        self.calls: list[tuple[int, dict]] = []

    def one_logger(self) -> UpstreamOneLogger:
        one_logger = UpstreamOneLogger(lambda step, figures: self.calls.append((step, dict(figures))), NAMES)
        if self.iteration:  # upstream's training_log of that step has run
            one_logger.held = []
            assert one_logger.step_ends(self.iteration) is None
        return one_logger


def test_a_logged_steps_figures_wait_for_its_end_at_the_step_upstream_logged_them():
    logged = Logged(iteration=4)
    one_logger = logged.one_logger()
    one_logger.held = []
    figures = {"train_iterations_end": 5, "validation_iterations_time_msecs_avg": None, "is_save_enabled": True}
    one_logger.log_metrics(figures)
    figures["train_iterations_end"] = 6  # upstream's dict, changed after the call: the record keeps what was given
    records = one_logger.step_ends(5)
    assert logged.calls == [] and records is not None
    assert records() == [(4, {"one_logger/train_iterations_end": 5.0, "one_logger/is_save_enabled": 1.0}, NAMES)]
    assert one_logger.step_ends(6) is None  # nothing waits for the next step


def test_figures_outside_a_logged_step_go_out_at_once():
    logged = Logged(iteration=4)
    one_logger = logged.one_logger()
    one_logger.log_metrics({"save_checkpoint_count": 1, "save_checkpoint_strategy": "sync"})
    assert logged.calls == [(4, {"one_logger/save_checkpoint_count": 1.0})]
    assert one_logger.step_ends(5) is None


def test_figures_before_the_first_log_step_wait_for_it():
    logged = Logged(iteration=0)
    one_logger = logged.one_logger()
    one_logger.log_metrics({"app_start_time": 1, "a": 1})
    one_logger.log_metrics({"a": 2})
    one_logger.held = []
    one_logger.log_metrics({"train_iterations_end": 1})  # in the first step: still before the first log step
    records = one_logger.step_ends(1)
    assert logged.calls == [] and records is not None
    assert records() == [(1, {"one_logger/app_start_time": 1.0, "one_logger/a": 2.0,
                              "one_logger/train_iterations_end": 1.0}, NAMES)]


def test_the_store_and_the_context_upstream_uses():
    one_logger = Logged().one_logger()
    one_logger.store_set("k", 1)
    assert (one_logger.store_has_key("k"), one_logger.store_get("k"), one_logger.store_get("x")) == (True, 1, None)
    assert (one_logger.store_pop("k"), one_logger.store_pop("k"), one_logger.store_has_key("k")) == (1, None, False)
    with one_logger.get_context_manager():
        raise ZeroDivisionError  # upstream divides by the iterations trained, zero in a job resumed at its last
    with pytest.raises(KeyboardInterrupt), one_logger.get_context_manager():
        raise KeyboardInterrupt


class HandOvers(RecordingRun):
    """Each hand-over to the hub (``log_later``) with the records it makes, apart from ``log``'s."""

    def log_later(self, records, step=None):
        self.calls.append(("hand-over", step, list(records())))


def tracking_with(run) -> MegatronTracking:
    """A writer rank's tracking with One-Logger on: training_log's wrapper as upstream's calls reach it."""
    tracking = MegatronTracking()
    tracking.writer = make_writer(run, log_learning_rate=True, log_batch_size=True)
    tracking.iteration_of = lambda args, kwargs: kwargs["iteration"]  # by keyword: the position's fallback
    tracking.iteration_position = 0
    tracking.one_logger = UpstreamOneLogger(lambda step, figures: run.log(step, figures, NAMES), NAMES)
    tracking.training_log(lambda iteration: None, None, (1,), {})  # the first logged step
    run.calls.clear()
    return tracking


def test_a_steps_figures_go_ahead_of_its_record_in_one_hand_over():
    run = HandOvers()
    tracking = tracking_with(run)

    def training_log(iteration):  # upstream's: its scalars, then its end-to-end figures
        tracking.writer.add_scalar("lm loss", 2.0, iteration)
        tracking.one_logger.log_metrics({"train_iterations_end": iteration})

    tracking.training_log(training_log, None, (), {"iteration": 2})
    [(kind, step, records)] = run.calls
    assert (kind, step) == ("hand-over", 2)
    assert records[0] == (1, {"one_logger/train_iterations_end": 2.0}, NAMES)  # at the last logged step, first
    assert records[1][0] == 2 and records[1][1]["lm loss"] == 2.0 and records[1][2] is None


def test_a_step_that_fails_journals_its_figures_at_once():
    run = RecordingRun()
    tracking = tracking_with(run)

    def training_log(iteration):
        tracking.one_logger.log_metrics({"train_iterations_end": iteration})
        raise SystemExit(1)  # upstream's exit inside training_log (--exit-signal-handler, a NaN check)

    with pytest.raises(SystemExit):
        tracking.training_log(training_log, None, (2,), {})
    assert run.calls == [("log", 1, {"one_logger/train_iterations_end": 2.0}, NAMES)]
    tracking.one_logger.log_metrics({"save_checkpoint_count": 1})  # and nothing is held after it
    assert run.calls[-1] == ("log", 1, {"one_logger/save_checkpoint_count": 1.0}, NAMES)
