"""Unit tests of the TrackingSummaryWriter's own logic, against a recording run (the integration with real
sinks is tested end to end in test_tracking_e2e.py)."""

import types

import pytest

from primus.backends.megatron_core.console_line import render_console_line
from primus.backends.megatron_core.tracking_summary_writer import StepFunctions, TrackingSummaryWriter
from primus.tracking.goodput.accounting import NAMES as GOODPUT
from primus.tracking.measure.progress import CONSUMED_SAMPLES, CONSUMED_TOKENS, ELAPSED, ETA, SAMPLES_PER_S


class RecordingRun:
    def __init__(self):
        self.calls = []

    def log(self, step, metrics, only=None):
        self.calls.append(("log", step, dict(metrics), only))

    def log_later(self, records, step=None):
        for step, metrics, only in records():  # at once, as the hub's thread would later
            self.log(step, metrics, only)

    def log_text(self, tag, text, step=0, only=None):
        self.calls.append(("text", step, {tag: text}, only))


@pytest.fixture
def run():
    return RecordingRun()


def megatron_args(**overrides):
    """The upstream arguments the writer reads (log_interval 1, every tracker on, no console line)."""
    values = dict(log_learning_rate_to_tensorboard=True, log_batch_size_to_tensorboard=True, log_interval=1,
                  tensorboard_log_interval=1, consumed_train_samples=0, log_avg_skip_iterations=0,
                  log_avg_reset_interval=10, log_throughput=False, log_progress=False, bf16=True, fp16=False,
                  peak_tflops=None, micro_batch_size=2, data_parallel_size=1, seq_length=8, world_size=1,
                  train_iters=10)
    return types.SimpleNamespace(**{**values, **overrides})


def make_writer(run, *, log_learning_rate, log_batch_size, perf_metrics=False, **args):
    step = StepFunctions(num_floating_point_operations=lambda args, batch_size: 1e6 * batch_size,
                         get_num_microbatches=lambda: 1)
    return TrackingSummaryWriter(run, megatron_args(log_learning_rate_to_tensorboard=log_learning_rate,
                                                    log_batch_size_to_tensorboard=log_batch_size, **args),
                                 step, perf_metrics=perf_metrics)


def test_scalars_of_one_step_become_one_log_call(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 6.9, 1)
    w.add_scalar("grad-norm", 1.5, 1)
    w.add_scalar("lm loss", 6.8, 2)
    w.flush()
    assert run.calls == [("log", 1, {"lm loss": 6.9, "grad-norm": 1.5}, None),
                         ("log", 2, {"lm loss": 6.8}, None)]


def test_vs_samples_tags_go_to_tensorboard_only_with_their_own_step(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 6.9, 3)
    w.add_scalar("lm loss vs samples", 6.9, 12)
    w.flush()
    assert ("log", 12, {"lm loss vs samples": 6.9}, ("tensorboard",)) in run.calls
    assert ("log", 3, {"lm loss": 6.9}, None) in run.calls


def test_vs_samples_tags_of_one_step_become_one_log_call(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    for samples in (4, 8):
        w.add_scalar("lm loss", 6.9, samples // 4)
        w.add_scalar("lm loss vs samples", 6.9, samples)
        w.add_scalar("learning-rate vs samples", 0.1, samples)
        w.flush()
    assert [call for call in run.calls if call[3]] == [
        ("log", 4, {"lm loss vs samples": 6.9, "learning-rate vs samples": 0.1}, ("tensorboard",)),
        ("log", 8, {"lm loss vs samples": 6.9, "learning-rate vs samples": 0.1}, ("tensorboard",))]


def test_tensors_and_numbers_are_handed_on_unread(run):
    """The training thread never reads a tensor here (on a GPU, .item() waits for the step): the hub does."""
    import torch
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    loss, norm = torch.tensor([2.5]), torch.tensor(1.25)
    w.add_scalar("lm loss", loss, 1)
    w.add_scalar("grad-norm", norm, 1)
    w.add_scalar("batch-size", 8, 1)
    w.flush()
    [(_, step, metrics, only)] = run.calls
    assert (step, only) == (1, None) and metrics["lm loss"] is loss and metrics["grad-norm"] is norm
    assert metrics["batch-size"] == 8  # the hub's thread makes it a float: the next test


def test_tensors_reach_the_journal_as_floats(tmp_path):
    import torch

    from primus.tracking import TrackingConfig, start_run
    from primus.tracking.journal.reader import read_all
    from primus.tracking.journal.records import METRICS

    tracked = start_run(TrackingConfig(run_dir=tmp_path))
    w = make_writer(tracked, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", torch.tensor([2.5]), 1)
    w.add_scalar("grad-norm", torch.tensor(1.25, dtype=torch.float64), 1)
    w.add_scalar("batch-size", 8, 1)
    w.flush()
    tracked.finish()
    [record] = [r for r in read_all(tmp_path) if r.kind == METRICS]
    upstreams = {k: v for k, v in record.data.items() if k not in GOODPUT}  # the run adds its goodput figures
    assert (record.step, upstreams) == (1, {"lm loss": 2.5, "grad-norm": 1.25, "batch-size": 8.0})
    assert all(type(value) is float for value in record.data.values())


def test_dropped_upstream_switches_are_honoured(run):
    w = make_writer(run, log_learning_rate=False, log_batch_size=False)
    for tag in ("learning-rate", "learning-rate vs samples", "batch-size", "batch-size vs samples", "lm loss"):
        w.add_scalar(tag, 1.0, 5)
    w.flush()
    assert run.calls == [("log", 5, {"lm loss": 1.0}, None)]


def test_a_step_ends_in_one_log_call_with_its_perf_figures(run):
    """upstream's scalars, "samples vs steps" and the perf figures of the interval: one call per logged step."""
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, perf_metrics=True)
    w.add_scalar("lm loss", 1.0, 1)
    w.end_step(1, system={"mem/host_rss_gib": 1.0})  # the first log step only starts the clock
    [(_, _, first, _)] = run.calls
    assert {k: v for k, v in first.items() if k != ELAPSED} == {
        "lm loss": 1.0, "samples vs steps": 0.0, CONSUMED_SAMPLES: 0.0, CONSUMED_TOKENS: 0.0}
    w.add_scalar("lm loss", 0.5, 2)
    w.end_step(2, system={"mem/host_rss_gib": 2.0})
    [(kind, step, metrics, only)] = run.calls[1:]
    assert (kind, step, only) == ("log", 2, None)
    assert metrics["lm loss"] == 0.5 and metrics["mem/host_rss_gib"] == 2.0
    assert {"perf/tokens_per_sec_per_gpu", "perf/tflops_per_gpu", "perf/iteration_time_ms"} <= set(metrics)


def test_the_figures_over_ranks_are_read_only_when_the_step_s_records_are_made():
    """stragglers on: the writer rank's figures over ranks may wait for their gather, so end_step (the training
    thread) hands them on unread, and the records (the hub's thread) take them with the step."""
    from primus.tracking.measure.gathered import Gathered

    class LaterRun(RecordingRun):
        def log_later(self, records, step=None):
            self.later = records

    run, read = LaterRun(), []
    stragglers = Gathered(lambda: read.append(1) or {"straggler/slowest_rank": 1.0})
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 1.0, 3)
    w.end_step(3, None, stragglers)
    assert read == []
    [(step, metrics, _)] = run.later()
    assert read == [1] and step == 3 and metrics["straggler/slowest_rank"] == 1.0


def test_a_step_without_upstreams_scalars_still_sends_its_figures(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, perf_metrics=True,
                               tensorboard_log_interval=100)
    w.end_step(7, system={})
    w.end_step(8, system={})
    [(_, step, metrics, _)] = run.calls[1:]
    assert step == 8 and "perf/tflops_per_gpu" in metrics


def test_text_goes_to_tensorboard_only(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True)
    w.add_text("lr", "0.001")
    assert run.calls == [("text", 0, {"lr": "0.001"}, ("tensorboard",))]


def test_a_failing_run_never_raises_into_upstream(caplog):
    class BrokenRun(RecordingRun):
        def log_later(self, records, step=None):
            raise RuntimeError("sink exploded")

    w = make_writer(BrokenRun(), log_learning_rate=True, log_batch_size=True)
    w.add_scalar("lm loss", 1.0, 1)
    w.end_step(1)  # hands step 1 on: the failure is swallowed
    w.add_scalar("lm loss", 1.0, 2)
    w.flush()
    w.add_scalar("lm loss vs samples", 1.0, 8)
    assert "sink exploded" in caplog.text
    assert caplog.text.count("tracking writer failed") == 1


class DeferringRun(RecordingRun):
    """Keeps what log_later is given, as the hub's queue does, until ``drain``."""

    def __init__(self):
        super().__init__()
        self.queued = []

    def log_later(self, records, step=None):
        self.queued.append(records)

    def drain(self):
        queued, self.queued = self.queued, []
        for records in queued:
            super().log_later(records)


def test_with_a_tracker_the_training_thread_formats_and_prints_nothing(capsys):
    """The step's figures and the console line are made by the function the hub's thread calls, from the clock
    read at the step: nothing printed before it runs, the line after, as the trackers get it."""
    run = DeferringRun()
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, log_throughput=True, log_progress=True)
    w.end_step(1)
    w.end_step(2)
    assert capsys.readouterr().out == "" and run.calls == []
    run.drain()
    [(_, step, metrics, _)] = [call for call in run.calls if "perf/tokens_per_sec_per_gpu" in call[2]]
    assert capsys.readouterr().out == render_console_line(2, 10, metrics) + "\n"


def test_with_the_console_line_on_the_figures_are_logged_as_printed(run, capsys):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, log_throughput=True)
    w.end_step(1)
    w.end_step(2)
    line = capsys.readouterr().out
    [(_, step, metrics, _)] = [call for call in run.calls if "perf/tokens_per_sec_per_gpu" in call[2]]
    assert step == 2 and line.startswith("[primus] iteration 2/10")
    assert f"tokens/s/GPU {metrics['perf/tokens_per_sec_per_gpu']:.1f}" in line


def test_figures_gathered_over_ranks_are_logged_as_they_are(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, perf_metrics=True)
    gathered = {"mem/host_rss_gib/max": 2.0, "mem/host_rss_gib": 1.0}
    w.end_step(1, system=gathered)
    w.end_step(2, system=gathered)
    [(_, _, metrics, _)] = run.calls[1:]
    assert {k: v for k, v in metrics.items() if k.startswith(("mem/", "sys/"))} == gathered  # no sample of ours


def test_without_the_gather_the_step_gets_the_devices_memory_and_the_hosts_latest_sample(run):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, perf_metrics=True)
    w.before_training()
    w.end_step(1)
    w.end_step(2)
    [(_, _, metrics, _)] = run.calls[1:]
    assert {"mem/host_rss_gib", "mem/host_peak_rss_gib", "sys/cpu_util_pct"} <= set(metrics)


def test_progress_goes_out_at_every_log_step_without_the_perf_figures(run):
    """No perf option: upstream's consumed samples (a resume restores them) and the ETA, and no perf/* but
    samples/s; off log steps nothing of ours; upstream's FLOPs formula never asked (a model it cannot count must
    still have its progress)."""

    def no_formula(args, batch_size):
        raise AssertionError("upstream's FLOPs formula asked for progress alone")

    step = StepFunctions(num_floating_point_operations=no_formula, get_num_microbatches=lambda: 1)
    w = TrackingSummaryWriter(run, megatron_args(log_interval=2), step, perf_metrics=False)
    for iteration, samples in ((1, 2), (2, 4), (3, 6), (4, 8)):
        w._args.consumed_train_samples = samples
        w.end_step(iteration)
    [(_, s1, odd, _), (_, s2, first, _), (_, s3, _, _), (_, s4, second, _)] = run.calls
    assert (s1, s2, s3, s4) == (1, 2, 3, 4) and not {CONSUMED_SAMPLES, ELAPSED} & set(odd)
    assert (first[CONSUMED_SAMPLES], first[CONSUMED_TOKENS]) == (4, 4 * 8) and ETA not in first
    assert (second[CONSUMED_SAMPLES], second[CONSUMED_TOKENS]) == (8, 8 * 8)
    assert {ETA, SAMPLES_PER_S} <= set(second) and not [k for k in second if k.startswith("perf/") and k !=
                                                          SAMPLES_PER_S]


def test_the_console_eta_is_the_trackers(run, capsys):
    w = make_writer(run, log_learning_rate=True, log_batch_size=True, log_progress=True)
    w.end_step(1)
    w.end_step(2)
    [(_, _, metrics, _)] = run.calls[1:]
    eta = round(metrics[ETA])
    assert f"ETA {eta // 3600}:{eta % 3600 // 60:02d}:{eta % 60:02d}" in capsys.readouterr().out


def test_the_last_console_line_the_hubs_thread_prints_is_in_the_uploaded_log(tmp_path):
    """TRACKING.finish has the hub's thread print what is queued before the console capture closes the log file
    the run's end uploads: the last log step's line is in it."""
    from primus.backends.megatron.session import MegatronTracking
    from primus.log_capture import capture_console, stop_console_capture
    from primus.tracking import TrackingConfig, start_run

    log_file = tmp_path / "logs" / "console.log"
    capture_console(log_file)
    tracking = MegatronTracking()
    try:
        tracking.writer = make_writer(start_run(TrackingConfig(run_dir=tmp_path / "run")), log_learning_rate=True,
                                      log_batch_size=True, log_throughput=True)
        tracking.writer.end_step(1)
        tracking.writer.end_step(2)
        tracking.finish()
    finally:
        stop_console_capture()  # already stopped by finish, unless it failed first
    assert "[primus] iteration 2/10 | tokens/s/GPU" in log_file.read_text()


def test_the_end_of_a_megatron_run_drains_the_hub_once_and_delivers_every_record(tmp_path, monkeypatch):
    """TRACKING.finish leaves the drain to the run's end (one, journaled, no sink waited for): the evaluation
    scalars written after the last step, the steps and the last console line are all delivered by it."""
    from primus.backends.megatron.session import MegatronTracking
    from primus.log_capture import capture_console, stop_console_capture
    from primus.tracking import TrackingConfig, start_run
    from primus.tracking.journal.reader import read_all
    from primus.tracking.journal.records import METRICS

    log_file = tmp_path / "logs" / "console.log"
    capture_console(log_file)
    run = start_run(TrackingConfig(run_dir=tmp_path / "run"))
    drains = []
    hub_flush = run._hub.flush  # the hub is real: this only counts its drains

    def counted(timeout_s, sinks=None):
        drains.append(sinks)
        return hub_flush(timeout_s, sinks)

    monkeypatch.setattr(run._hub, "flush", counted)
    tracking = MegatronTracking()
    try:
        tracking.writer = make_writer(run, log_learning_rate=True, log_batch_size=True, log_throughput=True)
        tracking.writer.end_step(1)
        tracking.writer.add_scalar("lm loss", 2.0, 2)
        tracking.writer.end_step(2)
        tracking.writer.add_scalar("lm loss validation", 1.5, 2)  # upstream's evaluation, after the step ended
        tracking.finish()
    finally:
        stop_console_capture()  # already stopped by finish, unless it failed first
    assert drains == [()]
    metrics = {(r.step, name) for r in read_all(tmp_path / "run") if r.kind == METRICS for name in r.data}
    assert {(2, "lm loss"), (2, "lm loss validation")} <= metrics
    assert "[primus] iteration 2/10 | tokens/s/GPU" in log_file.read_text()


@pytest.mark.parametrize("gtp_remat", [None, 1, 2])
def test_the_global_batch_is_upstreams_with_its_gtp_remat_peers(run, gtp_remat):
    """megatron-core 0.19's training_log counts micro-batch x data-parallel x GTP-remat peers x micro-batches
    (data_parallel_size leaves the GTP-remat axis out); earlier releases have no such argument."""
    asked = []

    def formula(args, batch_size):
        asked.append(batch_size)
        return 1e6 * batch_size

    step = StepFunctions(num_floating_point_operations=formula, get_num_microbatches=lambda: 3)
    extra = {} if gtp_remat is None else {"gtp_weight_remat_size": gtp_remat}
    w = TrackingSummaryWriter(run, megatron_args(micro_batch_size=2, data_parallel_size=4, **extra), step,
                              perf_metrics=True)
    w.end_step(1)
    w.end_step(2)
    assert set(asked) == {2 * 4 * (gtp_remat or 1) * 3}
