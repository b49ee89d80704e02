"""A real Megatron training whose run directory's disk (a tmpfs) fills mid-run: training neither crashes nor
stalls, TensorBoard (on another disk) and MLflow still get every step, the journal keeps what it took before
the disk filled, and the end of the run says exactly what was not journaled and where it went.

The job continues an MLflow run an earlier launch created (its id in run.json): the delivery process may still
be importing mlflow when the disk fills, and resuming a run writes nothing to the run directory."""

from __future__ import annotations

import json
import re
import threading

import pytest
from megatron_tracking_runs import mlflow_runs, toggles
from support.disks import fill
from support.journal_files import journal_lines
from support.readers import mlflow_history, read_tb_scalars

from primus.tracking.measure.names import mlflow_key

pytestmark = pytest.mark.slow

ITERATIONS = 40
FILL_AFTER = 5  # steps journaled before the disk fills
EXPERIMENT = "journal-full-disk"
EXIT_DEADLINE_S = 30
REPORT = re.compile(r"primus tracking: (\d+) records \(([^)]*), steps (\d+)-\d+\) could not be written to the journal "
                    r"(\S+) \(No space left on device\), so `primus tracking sync` and `primus report` cannot replay "
                    r"them\. Delivered directly to: ([^.]*)\. Lost for: none\.")


def fill_mid_run(run_dir, stop: threading.Event) -> None:
    """Fill the disk once FILL_AFTER steps are journaled."""
    while not stop.wait(0.05):
        # the steps whose "lm loss" is journaled, as the test counts them (other metrics of a step may come first)
        if len({r["s"] for r in journal_lines(run_dir, skip_torn=True) if r["k"] == "m" and "lm loss" in r["d"]}) \
                >= FILL_AFTER:
            fill(run_dir.parent)
            return


def earlier_launchs_mlflow_run(client, run_dir, uri: str) -> str:
    experiment_id = client.create_experiment(EXPERIMENT)
    run_id = client.create_run(experiment_id).info.run_id
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"run": {"status": "KILLED"}, "mlflow": {
        "run_id": run_id, "experiment_id": experiment_id, "tracking_uri": uri}}))
    return run_id


def test_a_disk_that_fills_mid_run_loses_no_step_from_the_trackers(megatron_run, mlflow_server, mlflow_client,
                                                                    tmpfs, tmp_path):
    disk = tmpfs("disk", "size=1m")
    run_dir, tensorboard = disk / "run", tmp_path / "tb"
    run_id = earlier_launchs_mlflow_run(mlflow_client, run_dir, mlflow_server.uri)
    stop = threading.Event()
    filler = threading.Thread(target=fill_mid_run, args=(run_dir, stop), daemon=True)
    filler.start()
    try:
        run = megatron_run("full-disk", *toggles(True, False, True), "--train-iters", str(ITERATIONS),
                           "--primus-run-dir", str(run_dir), "--tensorboard-dir", str(tensorboard),
                           "--mlflow-experiment-name", EXPERIMENT, "--primus-exit-deadline", str(EXIT_DEADLINE_S),
                           env={"MLFLOW_TRACKING_URI": mlflow_server.uri})
    finally:
        stop.set()
        filler.join()
    assert run.returncode == 0 and len(run.losses()) == ITERATIONS, run.explain()
    assert max(run.iteration_ms()) < EXIT_DEADLINE_S * 1000, run.explain()  # no step waited on the disk
    assert "could not write the journal" in run.output and "No space left on device" in run.output

    steps = list(range(1, ITERATIONS + 1))
    assert [r.info.run_id for r in mlflow_runs(mlflow_client, EXPERIMENT)] == [run_id]
    assert mlflow_client.get_run(run_id).info.status == "FINISHED"
    history = mlflow_history(mlflow_client, run_id, mlflow_key("lm loss"))
    tensorboard_points = read_tb_scalars(tensorboard)["lm loss"]
    assert [s for s, _ in history] == [s for s, _ in tensorboard_points] == steps
    assert [v for _, v in history] == pytest.approx([v for _, v in tensorboard_points], rel=1e-6)  # float32 in TB

    # the journal has the steps it could take: those before the disk filled (and any a freed page let in)
    journaled = [r["s"] for r in journal_lines(run_dir) if r["k"] == "m" and "lm loss" in r["d"]]
    assert journaled == sorted(set(journaled)) and steps[:FILL_AFTER] == journaled[:FILL_AFTER]
    assert len(journaled) < ITERATIONS
    [(total, kinds, first, where, delivered)] = REPORT.findall(run.output)
    missing = sorted(set(steps) - set(journaled))
    # the first record lost is at or before the first step whose loss is missing: a step's later records (upstream's
    # One-Logger figures) may be lost while its loss got in
    assert steps[FILL_AFTER - 1] <= int(first) <= missing[0] and where == str(run_dir / "journal")
    kinds = {kind: int(n) for n, kind in (part.split() for part in kinds.split(", "))}
    delivered = {sink: int(n) for sink, n in (part.split() for part in delivered.split(", "))}
    assert sum(kinds.values()) == int(total) and kinds["metrics"] >= len(missing)
    # every record was for TensorBoard; MLflow does not take the "vs samples" ones
    assert delivered["tensorboard"] == int(total) and 0 < delivered["mlflow"] < int(total)
