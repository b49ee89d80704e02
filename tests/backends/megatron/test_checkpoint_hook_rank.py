"""Upstream calls its W&B checkpoint hook (``wandb_utils.on_save_checkpoint_success``) on the last rank, right after
rank 0 was told to write the tracker file (``latest_checkpointed_iteration.txt``), without waiting for it: on a job
of two or more ranks the file is missing at the first save and one save behind after (seen on Megatron-LM's main,
whose first two-rank save disabled the patch with FileNotFoundError). The journaled save carries what rank 0
writes, the iteration, whatever the file holds when the hook runs. On a stand-in ``wandb_utils``; the real module is
patched by every Megatron checkpoint test."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from support.one_patch import installed

from primus.backends.megatron.session import TRACKING

TRACKER = "latest_checkpointed_iteration.txt"


def wandb_utils():
    def on_save_checkpoint_success(checkpoint_path, tracker_filename, save_dir, iteration): ...
    def on_load_checkpoint_success(checkpoint_path, load_dir): ...
    def _get_artifact_name_and_version(save_dir, checkpoint_path): return save_dir.stem, checkpoint_path.stem
    def _get_wandb_artifact_tracker_filename(save_dir): return Path(save_dir) / "latest_wandb_artifact_path.txt"

    return types.SimpleNamespace(**{f.__name__: f for f in (
        on_save_checkpoint_success, on_load_checkpoint_success, _get_artifact_name_and_version,
        _get_wandb_artifact_tracker_filename)})


class Saves:
    """Stands in for the run's checkpoint journal: what the patch hands it."""

    def __init__(self):
        self.saved = []

    def save_ended(self, save):
        self.saved.append(save)


@pytest.mark.parametrize("rank_0_wrote", [None, "2"], ids=["tracker-file-not-yet-written", "tracker-file-a-save-behind"])
def test_the_save_carries_the_iteration_rank_0_writes(tmp_path, monkeypatch, rank_0_wrote):
    saves = Saves()
    monkeypatch.setattr(TRACKING, "checkpoints", saves)
    if rank_0_wrote is not None:
        (tmp_path / TRACKER).write_text(rank_0_wrote)
    with installed("megatron.tracking.checkpoints", wandb_utils()) as module:
        module.on_save_checkpoint_success(str(tmp_path / "iter_0000003"), str(tmp_path / TRACKER), str(tmp_path), 3)
    [save] = saves.saved
    assert (save.iteration, save.files) == (3, {TRACKER: "3"})
