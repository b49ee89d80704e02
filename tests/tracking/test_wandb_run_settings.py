"""The W&B run settings a backend passes through (TorchTitan's WANDB_RUN_ID, _NOTES, _TAGS, _JOB_TYPE,
WANDB_FORK_FROM, WANDB_RESUME_FROM), read back from real W&B offline run files: applied on the run's first
start; a restart of the same run directory resumes that run instead of forking or rewinding again."""

from __future__ import annotations

import time

import pytest
from support.readers import wandb_files, wandb_records
from support.timing import wait_for

from primus.tracking import TrackingConfig, WandbConfig, start_run

pytestmark = pytest.mark.slow


def run_records(root, count: int) -> list:
    """The run record of every offline run file under ``root``, oldest first, once there are ``count``: W&B's
    service writes the file a moment after finish() returns."""

    def found() -> list:
        return [r.run for f in sorted(wandb_files(root), key=lambda p: p.parent.parent.name)
                for r in wandb_records(f) if r.WhichOneof("record_type") == "run"]

    wait_for(lambda: len(found()) >= count, 30, what=f"W&B's service to write {count} offline run file(s)")
    return found()


def train(tmp_path, wandb: WandbConfig, steps) -> str:
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="settings", wandb=wandb,
                                   exit_deadline_s=120))
    for step in steps:
        run.log(step, {"lm loss": float(step)})
    run.finish()
    return run.wandb_run_id


def test_given_id_notes_tags_job_type_and_fork_point(tmp_path, wandb_offline, monkeypatch):
    monkeypatch.setenv("WANDB_FORK_FROM", "parent9?_step=4")  # as TorchTitan's users set it: wandb reads it too
    cfg = WandbConfig(project="primus-tests", run_id="given01", notes="a note", tags=("ablation", "lr-3e-4"),
                      job_type="pretrain", fork_from="parent9?_step=4")
    assert train(tmp_path, cfg, range(5, 8)) == "given01"
    [first] = run_records(wandb_offline, 1)
    assert (first.run_id, first.notes, list(first.tags), first.job_type) == ("given01", "a note",
                                                                             ["ablation", "lr-3e-4"], "pretrain")
    assert (first.branch_point.run, first.branch_point.value, first.branch_point.metric) == ("parent9", 4, "_step")

    time.sleep(1.1)  # offline run folders are named by the second they start
    train(tmp_path, cfg, range(8, 10))  # the job restarted: the same run, not a second fork
    _, second = run_records(wandb_offline, 2)
    assert second.run_id == "given01" and not second.HasField("branch_point") and second.resume


def test_resume_from_rewinds_that_run_under_its_own_id(tmp_path, wandb_offline, monkeypatch):
    monkeypatch.setenv("WANDB_RESUME_FROM", "earlier3?_step=7")
    cfg = WandbConfig(project="primus-tests", resume_from="earlier3?_step=7")
    assert train(tmp_path, cfg, range(8, 10)) == "earlier3"
    [record] = run_records(wandb_offline, 1)
    assert (record.run_id, record.branch_point.run, record.branch_point.value) == ("earlier3", "earlier3", 7)
    time.sleep(1.1)
    train(tmp_path, cfg, range(10, 12))  # a restart resumes the rewound run, it does not rewind it again
    _, again = run_records(wandb_offline, 2)
    assert again.run_id == "earlier3" and not again.HasField("branch_point") and again.resume
