"""What Megatron-Bridge's checkpoint patches (patches/checkpoint_patches.py) bind when they install, on stand-ins for
Bridge's ``wandb_utils`` and ``checkpointing`` with Bridge 0.6's signatures: a release that renamed an argument
fails the install naming it (the registry then says the patch is skipped, before training), and the bound hooks
journal a save and a resume named with the module's own helpers. That they journal Bridge's real checkpoints is
test_bridge_checkpoints.py's, on real trainings."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from support.one_patch import installed

from primus.backends.megatron_bridge.session import TRACKING
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal


def wandb_utils(on_save=None) -> SimpleNamespace:
    """Bridge 0.6's hooks and naming helpers (their bodies: no W&B writer, as under Primus)."""

    def on_save_checkpoint_success(checkpoint_path, save_dir, iteration, wandb_writer):
        return None

    def on_load_checkpoint_success(checkpoint_path, load_dir, wandb_writer):
        return None

    return SimpleNamespace(
        on_save_checkpoint_success=on_save or on_save_checkpoint_success,
        on_load_checkpoint_success=on_load_checkpoint_success,
        _get_artifact_name_and_version=lambda save_dir, path: (save_dir.stem, path.stem),
        _get_wandb_artifact_tracker_filename=lambda save_dir: Path(save_dir) / "latest_wandb_artifact_path.txt",
    )


class Events(list):
    def event(self, name, **fields):
        self.append((name, fields))


@pytest.fixture
def journal(monkeypatch) -> Events:
    events = Events()
    monkeypatch.setattr(TRACKING, "checkpoints", CheckpointJournal(events))
    return events


def test_a_renamed_hook_argument_fails_the_install_naming_it():
    def on_save_checkpoint_success(checkpoint_path, checkpoint_dir, iteration, wandb_writer):
        return None

    with pytest.raises(TypeError, match="no argument 'save_dir'"):
        with installed("megatron_bridge.tracking.checkpoints", wandb_utils(on_save_checkpoint_success)):
            pass


def test_the_hooks_journal_a_save_and_a_resume_as_bridge_names_them(tmp_path, journal):
    folder = tmp_path / "ckpt" / "iter_0000006"
    folder.mkdir(parents=True)
    (folder.parent / "latest_wandb_artifact_path.txt").write_text("team/proj")
    with installed("megatron_bridge.tracking.checkpoints", wandb_utils()) as module:
        module.on_save_checkpoint_success(str(folder), str(folder.parent), 6, None)
        module.on_load_checkpoint_success(checkpoint_path=str(folder), load_dir=str(folder.parent), wandb_writer=None)
    [(saved, save), (loaded, load)] = journal
    assert (saved, save["iteration"], save["artifact"], save["alias"], save["files"]) == (
        "checkpoint_saved", 6, "ckpt", "iter_0000006", {})
    assert (loaded, load["iteration"], load["wandb_artifact"]) == ("checkpoint_loaded", 6, "team/proj/ckpt:iter_0000006")


def test_a_save_starts_at_bridges_step(journal):
    def save_checkpoint(state, model, optimizer, opt_param_scheduler, num_floating_point_operations_so_far):
        return "saved"

    def load_checkpoint(state, model, optimizer, opt_param_scheduler):
        return 6, 0

    module = SimpleNamespace(save_checkpoint=save_checkpoint, load_checkpoint=load_checkpoint)
    state = SimpleNamespace(train_state=SimpleNamespace(step=6))
    with installed("megatron_bridge.tracking.checkpoint_start", module):
        assert module.save_checkpoint(state, [], None, None, 0) == "saved"
        assert module.load_checkpoint(state=state, model=[], optimizer=None, opt_param_scheduler=None) == (6, 0)
    assert journal == [("checkpoint_save_start", {"iteration": 6})]  # a load's start is its record's seconds
