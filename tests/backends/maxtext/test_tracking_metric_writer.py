"""What a tracked MetricLogger writes through: one record per train step and per eval summary with
upstream's names, running-eval snapshots kept out, TensorBoard flushed every log_period train steps.
A real tracking run (journal and TensorBoard sink) is read back. And the config view that logger gets:
upstream's, with its own TensorBoard and W&B writers off."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from support.journal_files import without_goodput
from support.readers import read_tb_scalars

from primus.backends.maxtext.primus_options import PrimusOptions
from primus.backends.maxtext.step_progress import StepProgress
from primus.backends.maxtext.tracking_metric_writer import FLUSH_TIMEOUT_S, TrackingMetricWriter, UpstreamWritersOff
from primus.backends.maxtext.tracking_plan import plan_tracking
from primus.backends.maxtext.session import TRACKING
from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.goodput.accounting import GOODPUT_TEXT
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import METRICS, TEXT


def feed_for(tmp_path, log_period: int, announced: list[int], tensorboard: bool = True) -> TrackingMetricWriter:
    tracking = TrackingConfig(run_dir=tmp_path / "run",
                              tensorboard=TensorBoardConfig(tmp_path / "tb", queue_size=1000) if tensorboard else None)
    return TrackingMetricWriter(start_run(tracking), log_period=log_period, announce=announced.append)


def test_the_writer_gets_upstreams_log_period_and_the_plans_perf_settings(tmp_path):
    config = SimpleNamespace(run_name="tiny", base_output_directory=str(tmp_path), log_period=5, enable_wandb=False,
                             enable_tensorboard=True, tensorboard_dir=str(tmp_path / "tb"), get_keys=lambda: {},
                             max_target_length=16, global_batch_size_to_train_on=4, steps=3)
    writer = TRACKING.start(plan_tracking(config, PrimusOptions(peak_tflops=989.4), environ={}), config, None)
    assert (writer._log_period, writer.perf_metrics, writer.peak_tflops, writer.tensorboard) == (5, False, 989.4, True)
    writer.finish("FINISHED")


def test_only_upstreams_writers_are_off_and_the_view_is_read_only():
    config = SimpleNamespace(enable_tensorboard=True, enable_wandb=True, log_period=7, get_keys=lambda: {"a": 1})
    view = UpstreamWritersOff(config)
    assert (view.enable_tensorboard, view.enable_wandb, view.log_period, view.get_keys()) == (False, False, 7,
                                                                                              {"a": 1})
    with pytest.raises(ValueError, match="read-only"):
        view.log_period = 1
    assert config.enable_tensorboard is True  # training keeps the real config


def test_the_view_reads_each_of_upstreams_keys_once_and_passes_on_a_missing_one():
    class Counted(SimpleNamespace):
        reads: list[str] = []

        def __getattribute__(self, name):
            Counted.reads.append(name)
            return super().__getattribute__(name)

    view = UpstreamWritersOff(Counted(log_period=7, enable_wandb=True))
    assert [view.log_period for _ in range(3)] + [view.enable_wandb] * 2 == [7, 7, 7, False, False]
    assert Counted.reads == ["log_period"], "read once, then kept; the writers' keys never asked of upstream"
    with pytest.raises(AttributeError, match="steps"):
        getattr(view, "steps")  # noqa: B009 (the read is the point)


def test_one_record_per_step_with_upstreams_names_and_no_running_eval(tmp_path):
    feed = feed_for(tmp_path, 100, [])
    train = {"scalar": {"learning/loss": np.float32(7.5), "perf/step_time_seconds": 0.25},
             "scalars": {"learning/moe": {"layer_0": 1.0}}}
    feed.write(train, 3, "train")
    feed.write({"scalar": {"eval/avg_loss": 7.0, "eval/step_time_seconds": 0.1}}, 0, "running_eval")
    feed.write({"scalar": {"eval/avg_loss": np.float64(7.25)}}, 3, "eval")
    feed.write({}, 4, "train")
    feed.write_texts({"num_model_parameters": 213312}, tensorboard_only=False)
    feed.write_texts({"steps": 20}, tensorboard_only=True)
    feed.finish("FINISHED")
    records = list(read_all(tmp_path / "run"))
    assert [(r.step, without_goodput(r.data)) for r in records if r.kind == METRICS] == [
        (3, {"learning/loss": 7.5, "perf/step_time_seconds": 0.25, "learning/moe/layer_0": 1.0}),
        (3, {"eval/avg_loss": 7.25}),
    ]
    assert [(r.data["tag"], r.only) for r in records if r.kind == TEXT] == [("num_model_parameters", None),
                                                                            ("steps", ("tensorboard",)),
                                                                            (GOODPUT_TEXT, None)]  # the run's end


def test_a_train_steps_progress_is_made_later_from_the_values_of_the_step(tmp_path):
    """The progress figures are made on the hub's thread, from the step's scalars as upstream handed them (a
    change to upstream's dict after the call is not seen) and the clock read at the step."""
    run = start_run(TrackingConfig(run_dir=tmp_path / "run"))
    config = SimpleNamespace(max_target_length=16, global_batch_size_to_train_on=4, steps=10)
    feed = TrackingMetricWriter(run, log_period=100, progress=StepProgress(config))
    train = {"scalar": {"learning/loss": 7.5}, "scalars": {"learning/moe": {"layer_0": 1.0}}}
    feed.write(train, 2, "train")
    train["scalar"]["learning/loss"] = 0.0
    train["scalars"]["learning/moe"] |= {"layer_0": 9.0, "layer_1": 2.0}
    feed.finish("FINISHED")
    [record] = [r for r in read_all(tmp_path / "run") if r.kind == METRICS]
    assert record.data["learning/loss"] == 7.5 and record.data["progress/consumed_tokens"] == 3 * 4 * 16
    assert record.data["learning/moe/layer_0"] == 1.0 and "learning/moe/layer_1" not in record.data


def test_tensorboard_is_flushed_every_log_period_train_steps(tmp_path):
    announced: list[int] = []
    feed = feed_for(tmp_path, 2, announced)
    for step in range(3):
        feed.write({"scalar": {"learning/loss": 1.0 + step}}, step, "train")
    # on disk before the run ends: the queue (1000 events) alone would hold them until the end
    expected = [(0, 1.0), (1, 2.0), (2, 3.0)]
    deadline = time.monotonic() + FLUSH_TIMEOUT_S
    while time.monotonic() < deadline:  # the sink opens its directory on its own thread
        if (tmp_path / "tb").is_dir() and read_tb_scalars(tmp_path / "tb").get("learning/loss") == expected:
            break
        time.sleep(0.05)
    assert read_tb_scalars(tmp_path / "tb")["learning/loss"] == expected
    assert announced == [0, 2]  # by the hub's thread, before it journaled the step
    # one helper thread for every flush, ended with the run
    assert [t for t in threading.enumerate() if t.name == "primus-maxtext-flush"] == [feed._flusher]
    feed.finish("FINISHED")
    feed._flusher.join(FLUSH_TIMEOUT_S)
    assert not feed._flusher.is_alive()


def test_nothing_is_flushed_without_tensorboard(tmp_path):
    feed = feed_for(tmp_path, 1, announced := [], tensorboard=False)
    for step in range(3):
        feed.write({"scalar": {"learning/loss": 1.0}}, step, "train")
    feed.finish("FINISHED")  # the hub's thread has made every step's record
    assert feed._flusher is None and announced == []
