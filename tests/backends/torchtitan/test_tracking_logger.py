"""The logger upstream's MetricsProcessor writes to: one journaled record per call, upstream's tag
prefix, and the run's final status from how upstream closes it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from support.journal_files import without_goodput

from primus.backends.torchtitan.step_progress import ProcessorProgress
from primus.backends.torchtitan.tracking_logger import TrackingLogger
from primus.tracking import TrackingConfig, start_run
from primus.tracking.journal.files import STATE_FILE
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import METRICS


@pytest.fixture
def run(tmp_path):
    return start_run(TrackingConfig(run_dir=tmp_path / "run"))


def status(run) -> str:
    return json.loads((run.run_dir / STATE_FILE).read_text())["run"]["status"]


def test_each_log_call_is_one_record_with_upstreams_names(run):
    logger = TrackingLogger(run, tag="val")
    logger.log({"loss_metrics/global_avg_loss": 2.5, "throughput(tps)": 10}, step=4)
    logger.close()
    records = [r for r in read_all(run.run_dir) if r.kind == METRICS]
    assert [(r.step, without_goodput(r.data)) for r in records] == [(4, {"val/loss_metrics/global_avg_loss": 2.5,
                                                        "val/throughput(tps)": 10.0})]
    assert status(run) == "FINISHED"


def test_closed_while_an_exception_is_handled_means_failed(run):
    # upstream's train.main(): `except Exception: trainer.close(); raise`
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("Loss is not finite")
        except RuntimeError:
            TrackingLogger(run).close()
            raise
    assert status(run) == "FAILED"


def test_dropped_names_reach_no_tracker(run):
    logger = TrackingLogger(run)
    logger.dropped = frozenset({"mfu(%)"})
    logger.log({"mfu(%)": 3.0, "tflops": 0.5}, step=1)
    logger.close()
    assert [without_goodput(r.data) for r in read_all(run.run_dir) if r.kind == METRICS] == [{"tflops": 0.5}]


def test_the_figures_are_read_at_the_step_and_added_to_that_steps_record_only(run):
    """read_step reads upstream's counters before upstream's log resets them; the figures join the record of that
    step's log call (on the hub's thread), not a validation log at another step, and upstream's dict stays as it
    was given."""
    logger = TrackingLogger(run, progress=ProcessorProgress({"seq_len": 8, "local_batch_size": 2, "steps": 10}))
    dims = SimpleNamespace(dp_replicate=1, dp_shard=2)
    logger.read_step(SimpleNamespace(parallel_dims=dims), 3, {"straggler/busy_s/max": 1.5}, None)
    given = {"grad_norm": 0.5}
    logger.log(given, step=3)
    logger.log({"validation/loss": 2.0}, step=4)
    logger.close()
    records = [without_goodput(r.data) for r in read_all(run.run_dir) if r.kind == METRICS]
    assert records[0]["progress/consumed_samples"] == 3 * 2 * 2 and records[0]["straggler/busy_s/max"] == 1.5
    assert records[1] == {"validation/loss": 2.0} and given == {"grad_norm": 0.5}
