"""Megatron's checkpoints under Primus (patches/checkpoint_patches.py), on the save-then-resume runs of conftest.py:
the W&B artifact and ``latest_wandb_artifact_path.txt`` are those upstream's own W&B writer makes for the same
command without Primus's writers (read back from both offline run files); the resume asks W&B for the artifact
upstream would ask for; MLflow holds one manifest per save and the ``primus.resumed_from`` tag."""

from __future__ import annotations

import json

import pytest
from megatron_tracking_runs import RESUME_ARGS, RESUME_EXPERIMENT, mlflow_runs
from support.journal_files import journal_lines, run_dirs_under
from support.readers import artifact_relative_to, wandb_artifacts

pytestmark = pytest.mark.slow

# upstream's own writers: Primus's W&B writer and checkpoint patches off (the CPU platform patches stay on)
WITHOUT_PRIMUS_TRACKING = "megatron.tracking.writers,megatron.tracking.checkpoints,megatron.tracking.checkpoint_start"
POINTER = "latest_wandb_artifact_path.txt"


@pytest.fixture(scope="module")
def upstream_checkpoint(megatron_run, checkpoint, tmp_path_factory):
    """The first run of ``stopped_then_resumed`` with upstream's W&B writer, saving to a folder of the same name."""
    folder = tmp_path_factory.mktemp("upstream") / checkpoint.name  # upstream names the artifact after it
    env = {"WANDB_MODE": "offline", "PRIMUS_DISABLE_PATCHES": WITHOUT_PRIMUS_TRACKING}
    run = megatron_run("upstream-save", *RESUME_ARGS, "--save", str(folder), "--exit-interval", "2",
                       "--wandb-exp-name", "upstream", "--wandb-save-dir", str(folder.parent / "wandb"), env=env)
    assert run.returncode == 0, run.explain()
    return folder


def test_each_save_logs_the_artifact_upstream_logs(stopped_then_resumed, checkpoint, upstream_checkpoint):
    [upstream] = wandb_artifacts(upstream_checkpoint.parent)
    ours = wandb_artifacts(checkpoint)
    assert [a["aliases"] for a in ours] == [["iter_0000002", "latest"], ["iter_0000003", "latest"]]
    assert artifact_relative_to(ours[0], checkpoint) == artifact_relative_to(upstream, upstream_checkpoint)
    assert artifact_relative_to(upstream, upstream_checkpoint)["entries"] == {
        ".metadata": "iter_0000002/.metadata", "__0_0.distcp": "iter_0000002/__0_0.distcp",
        "metadata.json": "iter_0000002/metadata.json", "latest_checkpointed_iteration.txt": 1,
    }
    assert ours[1]["metadata"] == {"iteration": 3} and ours[1]["name"] == checkpoint.name


def test_the_save_directory_points_to_the_project_as_upstream_s_does(stopped_then_resumed, checkpoint,
                                                                    upstream_checkpoint):
    assert (checkpoint / POINTER).read_text() == (upstream_checkpoint / POINTER).read_text() == f"/{RESUME_EXPERIMENT}"


def test_the_resume_asks_wandb_for_the_artifact_upstream_asks_for(stopped_then_resumed, checkpoint):
    _, second = stopped_then_resumed
    [run_dir] = run_dirs_under(checkpoint)
    [load] = [r["d"] for r in journal_lines(run_dir) if r["d"].get("event") == "checkpoint_loaded"]
    # upstream's on_load_checkpoint_success: "<latest_wandb_artifact_path.txt>/<save dir's stem>:<checkpoint's stem>"
    assert load["wandb_artifact"] == f"/{RESUME_EXPERIMENT}/{checkpoint.name}:iter_0000002"
    assert load["path"] == str(checkpoint / "iter_0000002")
    # the iteration from upstream's folder name, the seconds from load_checkpoint's start (goodput's badput)
    assert load["iteration"] == 2 and 0 < load["seconds"] < second.seconds
    # W&B refuses use_artifact offline; upstream prints "failed to find checkpoint ... in wandb" then
    assert f"W&B did not find the checkpoint {checkpoint / 'iter_0000002'}" in second.output, second.explain()


def test_mlflow_holds_a_manifest_per_save_and_the_resumed_from_tag(stopped_then_resumed, checkpoint, mlflow_client,
                                                                  tmp_path):
    [run] = mlflow_runs(mlflow_client, RESUME_EXPERIMENT)
    assert run.data.tags["primus.resumed_from"] == str(checkpoint / "iter_0000002")
    mlflow_client.download_artifacts(run.info.run_id, "checkpoints", str(tmp_path))
    # references only: the checkpoint's own files go up only with upload_checkpoints (off by default)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["iter_0000002.json", "iter_0000003.json"]
    for iteration in (2, 3):
        manifest = json.loads((tmp_path / "checkpoints" / f"iter_{iteration:07d}.json").read_text())
        assert (manifest["iteration"], manifest["path"]) == (iteration, str(checkpoint / f"iter_{iteration:07d}"))
        assert manifest["seconds"] > 0 and manifest["bytes"] > 2_000_000, manifest  # the tiny GPT's 2.3 MB
