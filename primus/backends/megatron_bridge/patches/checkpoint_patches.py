"""Patches that journal Megatron-Bridge's checkpoints as Megatron's are: a start mark as ``save_checkpoint`` and
``load_checkpoint`` begin, the save and the load from Bridge's own W&B hooks (``on_save_checkpoint_success`` /
``on_load_checkpoint_success``), which Bridge calls on its last rank (the one that tracks) after each global save
(once an asynchronous one is finalised) and after a load.

Bridge's hooks log each checkpoint as a W&B reference artifact with its own W&B writer, which the writers patch
leaves unset: the record carries what they would have logged, and the W&B sink logs it in the delivery process.
Bridge's MLflow hook (its own writer, unset too) gives way to the MLflow sink's manifest per save."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.tracking.checkpoints.hooks import (
    SaveFolderArtifacts,
    load_start,
    on_load_success,
    on_save_success,
    save_start,
)
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE


def _journal():
    from primus.backends.megatron_bridge.session import TRACKING

    return TRACKING.checkpoints


@REGISTRY.patch(
    "megatron_bridge.tracking.checkpoint_start",
    target="megatron.bridge.training.checkpointing",
    upstream=MEGATRON_BRIDGE,
    backend="megatron_bridge",
    description="checkpointing.save_checkpoint/load_checkpoint: a start mark in the journal (the save's seconds; an "
    "expected gap), and the load's start (its seconds)",
)
def _install_starts(module: ModuleType, handle: PatchHandle) -> None:
    save = Arguments(module.save_checkpoint, "state")
    Arguments(module.load_checkpoint, "state")  # the signature this was written for: a change fails the install

    def iteration(args, kwargs):  # Bridge names the checkpoint after its step (get_checkpoint_name)
        return save("state", args, kwargs).train_state.step

    handle.wrap(module, "save_checkpoint", save_start(_journal, iteration))
    handle.wrap(module, "load_checkpoint", load_start(_journal))


@REGISTRY.patch(
    "megatron_bridge.tracking.checkpoints",
    target="megatron.bridge.training.utils.wandb_utils",
    upstream=MEGATRON_BRIDGE,
    backend="megatron_bridge",
    description="wandb_utils.on_save_checkpoint_success/on_load_checkpoint_success: each save and load journaled, "
    "for Bridge's W&B artifact (same name, alias, metadata, latest_wandb_artifact_path.txt) and every tracker",
)
def _install_checkpoint_hooks(module: ModuleType, handle: PatchHandle) -> None:
    # Bridge's own helpers: the artifact it would log (no file in it, unlike Megatron's)
    artifacts = SaveFolderArtifacts(module._get_artifact_name_and_version, module._get_wandb_artifact_tracker_filename)
    handle.wrap(
        module, "on_save_checkpoint_success", on_save_success(_journal, module.on_save_checkpoint_success, artifacts)
    )
    handle.wrap(
        module, "on_load_checkpoint_success", on_load_success(_journal, module.on_load_checkpoint_success, artifacts)
    )
