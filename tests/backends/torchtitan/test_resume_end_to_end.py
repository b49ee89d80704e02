"""A checkpointed TorchTitan job stopped mid-run and launched again the way a user does — `primus train
--config EXP.yaml`, twice, same experiment — continues the same MLflow run and the same W&B run from its
checkpoint, and every tracker (the real MLflow server, TensorBoard files, the W&B offline file) holds every
step once: the steps trained again after the checkpoint are not tracked twice. Each checkpoint
(patches/checkpoint_patches.py) is journaled and reaches W&B as a reference artifact, MLflow as a manifest, with
the resume as ``primus.resumed_from``."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from support.journal_files import journal_lines
from support.launch import FinishedRun, start, wait_or_kill
from support.one_logger_files import attempts, attrs, named
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history, wandb_artifacts, wandb_run_ids

from primus.backends.torchtitan.assets import ASSETS_ENV
from primus.tracking.measure.progress import CONSUMED_SAMPLES

pytestmark = pytest.mark.slow

STEPS, CHECKPOINT_EVERY, STOP_AFTER = 4, 2, 3  # stopped while step 4 trains: step 3 is trained again
LOSS = "loss_metrics/global_avg_loss"
EXPERIMENT = """
exp_name: titan_resume
workspace: {workspace}
modules:
  pre_trainer:
    framework: torchtitan
    config: pre_trainer.yaml
    overrides:
      model: {{module: primus.backends.torchtitan, config: llama3_debugmodel_cpu}}
      training: {{steps: {steps}}}
      checkpoint: {{enable: true, interval: {every}}}
      metrics: {{log_freq: 1, enable_tensorboard: true, enable_wandb: true, enable_mlflow: true}}
"""
RUN_DIR_LINE = "[primus] run directory: "


class Launch(FinishedRun):
    def run_dir(self) -> Path:
        [line] = [x for x in self.output.splitlines() if x.startswith(RUN_DIR_LINE)]
        return Path(line[len(RUN_DIR_LINE):])


def journaled_steps(run_dir: Path) -> list[int]:
    return [r["s"] for r in journal_lines(run_dir, skip_torn=True)  # a line the hub is writing: skipped
            if r["k"] == "m" and LOSS in r["d"]]


@pytest.fixture(scope="module")
def relaunched(tmp_path_factory, titan_assets, mlflow_server) -> tuple[Launch, Launch]:
    root = tmp_path_factory.mktemp("titan-resume")
    experiment = root / "titan_resume.yaml"
    experiment.write_text(EXPERIMENT.format(workspace=root / "ws", steps=STEPS, every=CHECKPOINT_EVERY))
    env = {"MLFLOW_TRACKING_URI": mlflow_server.uri, "WANDB_MODE": "offline", ASSETS_ENV: str(titan_assets),
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "primus.cli.main", "train", "--config", str(experiment)]

    started = time.monotonic()
    first = start(command, root, root / "first.log", env)
    run_dir = root / "ws" / "titan_resume" / "checkpoint" / "primus"
    deadline = time.monotonic() + 240
    while STOP_AFTER not in journaled_steps(run_dir):  # the checkpoint of step 2 is written before step 3 starts
        if first.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"never reached step {STOP_AFTER}: "
                        f"{Launch(first.poll(), root / 'first.log', time.monotonic() - started).explain()}")
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGTERM)  # as a scheduler stops a job: its whole process group
    stopped = Launch(wait_or_kill(first, 120), root / "first.log", time.monotonic() - started)

    started = time.monotonic()
    second = start(command, root, root / "second.log", env)
    return stopped, Launch(wait_or_kill(second, 240), root / "second.log", time.monotonic() - started)


def test_relaunch_resumes_the_same_runs_from_the_checkpoint_without_duplicate_steps(relaunched, mlflow_client):
    stopped, resumed = relaunched
    assert stopped.returncode not in (0, None), stopped.explain()
    assert resumed.returncode == 0, resumed.explain()
    run_dir = resumed.run_dir()
    assert stopped.run_dir() == run_dir and run_dir.parent.name == "checkpoint"  # beside upstream's step-N folders
    assert f"Loading the checkpoint from {run_dir.parent / 'step-2'}." in resumed.output
    every_step = list(range(1, STEPS + 1))

    ends = [line["d"] for line in journal_lines(run_dir)
            if line["k"] == "e" and line["d"]["event"] == "end"]
    assert [e["status"] for e in ends] == ["KILLED", "FINISHED"]
    assert ends[-1]["dropped"].get("already_tracked", 0) >= 1  # trained again after the checkpoint, tracked once
    assert journaled_steps(run_dir) == every_step

    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("titan_resume").experiment_id])
    assert run.info.status == "FINISHED"
    assert [s for s, _ in mlflow_history(mlflow_client, run.info.run_id, LOSS)] == every_step
    # upstream's step restored from the checkpoint: the consumed count goes on (local batch 2, one process)
    assert dict(mlflow_history(mlflow_client, run.info.run_id, CONSUMED_SAMPLES)) == {s: 2 * s for s in every_step}

    [logdir] = {p.parent for p in run_dir.rglob("events.out.tfevents.*")}
    assert [s for s, _ in read_tb_scalars(logdir)[LOSS]] == every_step
    assert len(wandb_run_ids(run_dir)) == 1
    assert sorted(r["_step"] for r in read_wandb_history(run_dir) if LOSS in r) == every_step


def test_each_checkpoint_is_journaled_with_its_start_and_the_resume(relaunched):
    _, resumed = relaunched
    run_dir = resumed.run_dir()
    events = [(r["d"]["event"], r["d"].get("iteration"), r["d"].get("path")) for r in journal_lines(run_dir)
              if r["k"] == "e" and r["d"]["event"].startswith("checkpoint")]
    step = {n: str(run_dir.parent / f"step-{n}") for n in (2, 4)}
    assert events == [("checkpoint_save_start", 2, None), ("checkpoint_saved", 2, step[2]),
                      ("checkpoint_loaded", 2, step[2]),
                      ("checkpoint_save_start", 4, None), ("checkpoint_saved", 4, step[4])]


def test_each_checkpoint_reaches_wandb_as_a_reference_and_mlflow_as_a_manifest(relaunched, mlflow_client, tmp_path):
    _, resumed = relaunched
    run_dir = resumed.run_dir()
    logged = {(a["name"], tuple(a["aliases"]), a["metadata"]["iteration"]) for a in wandb_artifacts(run_dir)}
    assert logged == {("checkpoint", ("latest", "step-2"), 2), ("checkpoint", ("latest", "step-4"), 4)}
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("titan_resume").experiment_id])
    assert run.data.tags["primus.resumed_from"] == str(run_dir.parent / "step-2")
    mlflow_client.download_artifacts(run.info.run_id, "checkpoints", str(tmp_path))
    for n in (2, 4):
        manifest = json.loads((tmp_path / "checkpoints" / f"step-{n}.json").read_text())
        assert (manifest["iteration"], manifest["path"]) == (n, str(run_dir.parent / f"step-{n}"))
        assert manifest["bytes"] > 0 and manifest["seconds"] > 0, manifest


def test_each_process_is_one_one_logger_application_with_its_loop_and_saves(relaunched):
    """One-Logger (metrics.enable_one_logger, on by default; the real nv-one-logger): the stopped process saved at 2
    and logged 1..3; the relaunch loaded 2 and its steps tracked once (4: step 3 was trained again) saved at 4."""
    _, resumed = relaunched
    run_dir = resumed.run_dir()
    files = attempts(run_dir)
    assert list(files) == ["attempt-1.jsonl", "attempt-2.jsonl"]
    first, second = files.values()
    for recs, saved_at in ((first, 2), (second, 4)):
        assert len(named(recs, "start", "application")) == len(named(recs, "stop", "application")) == 1
        assert len(named(recs, "start", "training_loop")) == 1
        assert [attrs(r)["current_iteration"] for r in named(recs, "event", "save_checkpoint_success")] == [saved_at]
        [init] = named(recs, "event", "one_logger_initialization")
        assert attrs(init)["session_tag"] == json.loads((run_dir / "meta.json").read_text())["run_name"]
        assert {"one_logger_project:torchtitan", "app_tag_run_version:0.0.0"} <= set(attrs(init)["custom_metadata"])
        [config] = named(recs, "event", "update_training_telemetry_config")
        assert (attrs(config)["global_batch_size"], attrs(config)["train_iterations_target"]) == (2, STEPS)
    assert attrs(named(first, "event", "training_metrics_update")[-1])["num_iterations"] == STOP_AFTER
    assert len(named(second, "complete", "checkpoint_load")) == 1
    [loop] = named(second, "start", "training_loop")
    assert attrs(loop)["train_iterations_start"] == CHECKPOINT_EVERY
