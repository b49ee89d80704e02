"""A tracker added by another distribution (entry-point group primus.sinks, turned on by PRIMUS_SINKS) gets the
journal's records as the built-in trackers do: every step, in the delivery process, from its saved cursor;
what it missed while down is replayed by `primus tracking sync` and the next launch resumes its tracker run.
A plugin that is missing or broken stops the run before it starts, naming the distribution and the entry point.

These are the tracking core's own end-to-end runs (a real delivery process, a real installed distribution);
tests/backends/megatron/test_plugin_sink_training.py feeds the same plugin from a real Megatron training."""

from __future__ import annotations

import os

import pytest
from support.journal_files import without_goodput
from support.plugin_dists import SINK_DOWN, SINK_MODULE, read_sink_record

from primus.tracking import TrackingConfig, TrackingConfigError, start_run
from primus.tracking.delivery.replay import sync_run
from primus.tracking.journal.reader import journal_end
from primus.tracking.journal.run_state import read_json

DEMO_ENTRY = "`demo = primus_demo_tracker:DemoSink` (group primus.sinks) of distribution primus-demo-tracker 0.3"


def _run(run_dir, steps, **kw):
    run = start_run(TrackingConfig(run_dir=run_dir, experiment_name="plugins", params={"lr": 0.1},
                                   tags={"team": "x"}, **kw))
    for step in steps:
        run.log(step, {"loss": step / 10, "lr": 0.1})
    run.finish()
    return run


def _steps(record: list[dict]) -> list[int]:
    return [line["step"] for line in record if "step" in line]


def test_a_plugin_sink_receives_every_step_from_the_delivery_process(sink_plugin, tmp_path):
    sink_plugin()
    run_dir = tmp_path / "run"
    _run(run_dir, range(1, 21))
    record = read_sink_record(run_dir)
    opened, *metrics, closed = record
    assert opened["run_name"] == "run" and opened["experiment"] == "plugins" and opened["params"] == 1
    assert {"team", "primus.version.primus-tracking"} <= set(opened["tags"])  # the run's tags and the system tags
    assert [(m["step"], without_goodput(m["metrics"])) for m in metrics] == [
        (s, {"loss": s / 10, "lr": 0.1}) for s in range(1, 21)]
    assert {m["pid"] for m in metrics} != {os.getpid()}  # off the training process's GIL
    assert closed == {"status": "FINISHED", "complete": True}
    cursor = read_json(run_dir / "cursors" / "demo.json")
    assert cursor == {"target": opened["open"], "offset": journal_end(run_dir)}


def test_steps_a_down_tracker_missed_are_synced_and_a_relaunch_resumes_its_run(sink_plugin, tmp_path):
    sink_plugin()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / SINK_DOWN).touch()
    run = _run(run_dir, range(10), exit_deadline_s=1.0)
    assert read_sink_record(run_dir) == [] and run.stats()["sinks"]["demo"]["pending_bytes"] > 0

    (run_dir / SINK_DOWN).unlink()  # the tracker is back
    report = sync_run(run_dir, timeout_s=60)
    assert report.ok and report.delivered == {"demo": True}
    assert _steps(read_sink_record(run_dir)) == list(range(10))

    _run(run_dir, range(10, 15))  # the job relaunched: the same tracker run, only the new steps
    record = read_sink_record(run_dir)
    assert _steps(record) == list(range(15))
    assert len({line["open"] for line in record if "open" in line}) == 1
    assert [line["status"] for line in record if "status" in line] == ["FINISHED", "FINISHED"]


BROKEN = {
    "not installed": (dict(), "nosuch", "PRIMUS_SINKS names 'nosuch' but no installed distribution has an entry point "
                      "'nosuch' in group primus.sinks (installed: ['demo']): install the plugin into this environment"),
    "import fails": (dict(module="import primus_no_such_client\n"), "demo",
                     f"{DEMO_ENTRY} cannot be loaded (ModuleNotFoundError: No module named 'primus_no_such_client'): "
                     f"fix or reinstall that distribution, or uninstall it"),
    "not a sink": (dict(module=SINK_MODULE + "\ndef helper():\n    pass\n", value="primus_demo_tracker:helper"), "demo",
                   "(group primus.sinks) of distribution primus-demo-tracker 0.3 names <function helper"),
    "another name": (dict(module=SINK_MODULE.replace("name = 'demo'", "name = 'other'")), "demo",
                     f"{DEMO_ENTRY}: DemoSink.name is 'other'; it must be the entry point's name, 'demo'"),
    "a built-in tracker": (dict(), "mlflow", "PRIMUS_SINKS names 'mlflow', which is a built-in sink: list plugin "
                           "sinks only"),
}


@pytest.mark.parametrize("changes, sinks, expected", BROKEN.values(), ids=BROKEN.keys())
def test_a_missing_or_broken_plugin_stops_the_run_before_it_starts(sink_plugin, tmp_path, monkeypatch, changes, sinks,
                                                                   expected):
    sink_plugin(**changes)
    monkeypatch.setenv("PRIMUS_SINKS", sinks)
    with pytest.raises(TrackingConfigError) as error:
        start_run(TrackingConfig(run_dir=tmp_path / "run"))
    assert expected in str(error.value)
    assert not (tmp_path / "run").exists()
