"""Unit tests of the TrackingSummaryWriter's own logic, against a recording run (the integration with real
sinks is tested end to end in test_tracking_e2e.py)."""

import pytest

from primus.backends.megatron.training.tracking_summary_writer import TrackingSummaryWriter


class RecordingRun:
    def __init__(self):
        self.calls = []

    def log(self, step, metrics, only=None):
        self.calls.append(("log", step, dict(metrics), only))

    def log_text(self, tag, text, step=0, only=None):
        self.calls.append(("text", step, {tag: text}, only))


@pytest.fixture
def run():
    return RecordingRun()


def test_scalars_of_one_step_become_one_log_call(run):
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 6.9, 1)
    w.add_scalar("grad-norm", 1.5, 1)
    w.add_scalar("lm loss", 6.8, 2)
    w.flush()
    assert run.calls == [("log", 1, {"lm loss": 6.9, "grad-norm": 1.5}, None),
                         ("log", 2, {"lm loss": 6.8}, None)]


def test_vs_samples_tags_go_to_tensorboard_only_with_their_own_step(run):
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 6.9, 3)
    w.add_scalar("lm loss vs samples", 6.9, 12)
    w.flush()
    assert ("log", 12, {"lm loss vs samples": 6.9}, ("tensorboard",)) in run.calls
    assert ("log", 3, {"lm loss": 6.9}, None) in run.calls


def test_vs_samples_tags_of_one_step_become_one_log_call(run):
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    for samples in (4, 8):
        w.add_scalar("lm loss", 6.9, samples // 4)
        w.add_scalar("lm loss vs samples", 6.9, samples)
        w.add_scalar("learning-rate vs samples", 0.1, samples)
        w.emit()
    assert [call for call in run.calls if call[3]] == [
        ("log", 4, {"lm loss vs samples": 6.9, "learning-rate vs samples": 0.1}, ("tensorboard",)),
        ("log", 8, {"lm loss vs samples": 6.9, "learning-rate vs samples": 0.1}, ("tensorboard",))]


def test_tensors_are_handed_on_unread_and_numbers_as_floats(run):
    """The training thread never reads a tensor here (on a GPU, .item() waits for the step): the hub does."""
    import torch
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    loss, norm = torch.tensor([2.5]), torch.tensor(1.25)
    w.add_scalar("lm loss", loss, 1)
    w.add_scalar("grad-norm", norm, 1)
    w.add_scalar("batch-size", 8, 1)
    w.flush()
    [(_, step, metrics, only)] = run.calls
    assert (step, only) == (1, None) and metrics["lm loss"] is loss and metrics["grad-norm"] is norm
    assert metrics["batch-size"] == 8.0 and type(metrics["batch-size"]) is float


def test_tensors_reach_the_journal_as_floats(tmp_path):
    import torch

    from primus.tracking import TrackingConfig, start_run
    from primus.tracking.journal import METRICS, read_all

    tracked = start_run(TrackingConfig(run_dir=tmp_path))
    w = TrackingSummaryWriter(tracked, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", torch.tensor([2.5]), 1)
    w.add_scalar("grad-norm", torch.tensor(1.25, dtype=torch.float64), 1)
    w.flush()
    tracked.finish()
    [record] = [r for r in read_all(tmp_path) if r.kind == METRICS]
    assert (record.step, record.data) == (1, {"lm loss": 2.5, "grad-norm": 1.25})


def test_dropped_upstream_switches_are_honoured(run):
    w = TrackingSummaryWriter(run, log_learning_rate=False, log_batch_size=False)
    for tag in ("learning-rate", "learning-rate vs samples", "batch-size", "batch-size vs samples", "lm loss"):
        w.add_scalar(tag, 1.0, 5)
    w.flush()
    assert run.calls == [("log", 5, {"lm loss": 1.0}, None)]


def test_emit_merges_extra_metrics_into_the_step(run):
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 1.0, 7)
    w.emit({"perf/tflops_per_gpu": 3.0}, step=7)
    assert run.calls == [("log", 7, {"lm loss": 1.0, "perf/tflops_per_gpu": 3.0}, None)]
    w.emit({"perf/tflops_per_gpu": 4.0}, step=8)
    assert run.calls[-1] == ("log", 8, {"perf/tflops_per_gpu": 4.0}, None)


def test_text_goes_to_tensorboard_only(run):
    w = TrackingSummaryWriter(run, log_learning_rate=True, log_batch_size=True)
    w.add_text("lr", "0.001")
    assert run.calls == [("text", 0, {"lr": "0.001"}, ("tensorboard",))]


def test_a_failing_run_never_raises_into_upstream(caplog):
    class BrokenRun(RecordingRun):
        def log(self, step, metrics, only=None):
            raise RuntimeError("sink exploded")

    w = TrackingSummaryWriter(BrokenRun(), log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 1.0, 1)
    w.add_scalar("lm loss", 1.0, 2)  # emits step 1: the failure is swallowed
    w.flush()
    w.add_scalar("lm loss vs samples", 1.0, 8)
    assert "sink exploded" in caplog.text
    assert caplog.text.count("tracking writer failed") == 1
