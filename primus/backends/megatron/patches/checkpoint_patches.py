"""Patches that journal Megatron's checkpoints (``primus/tracking/checkpoints/checkpoint_journal.py``): a start mark as
``checkpointing.save_checkpoint`` begins, the save and a load from upstream's own W&B hooks
(``wandb_utils.on_save_checkpoint_success`` / ``on_load_checkpoint_success``).

Upstream's hooks log each checkpoint as a W&B reference artifact, and ``use_artifact`` on a load, but only when its
own W&B writer is set, which ``megatron.tracking.writers`` leaves unset (W&B is a sink of the hub): without these
patches the artifacts would stop under Primus. Upstream's hook still runs first (it does nothing without its writer);
the record carries what upstream would have logged (its own name and alias helpers, the tracker file's text), and
the W&B sink logs it in the delivery process."""

from __future__ import annotations

from pathlib import Path

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.tracking.checkpoints.hooks import (
    SaveFolderArtifacts,
    load_start,
    on_load_success,
    on_save_success,
    save_start,
)
from primus.upstreams.megatron import MEGATRON


@REGISTRY.patch(
    "megatron.tracking.checkpoint_start",
    target="megatron.training.checkpointing",
    upstream=MEGATRON,
    backend="megatron",
    description="checkpointing.save_checkpoint/load_checkpoint: a start mark in the journal (the save's seconds; an "
    "expected gap), and the load's start (its seconds)",
)
def _install_save_start(module, handle):
    from primus.backends.megatron.session import TRACKING

    arguments = Arguments(module.save_checkpoint, "iteration")

    def journal():
        return TRACKING.checkpoints

    handle.wrap(
        module, "save_checkpoint", save_start(journal, lambda args, kwargs: arguments("iteration", args, kwargs))
    )
    handle.wrap(module, "load_checkpoint", load_start(journal))


@REGISTRY.patch(
    "megatron.tracking.checkpoints",
    target="megatron.training.wandb_utils",
    upstream=MEGATRON,
    backend="megatron",
    description="wandb_utils.on_save_checkpoint_success/on_load_checkpoint_success: each save and load journaled, "
    "for upstream's W&B artifact (same name, alias, files, latest_wandb_artifact_path.txt) and every tracker",
)
def _install_checkpoint_hooks(module, handle):
    from primus.backends.megatron.session import TRACKING

    tracker = Arguments(module.on_save_checkpoint_success, "tracker_filename")
    # upstream's own helpers: the artifact it would log
    artifacts = SaveFolderArtifacts(module._get_artifact_name_and_version, module._get_wandb_artifact_tracker_filename)

    def tracker_file(args, kwargs, iteration):
        # what rank 0 writes to the tracker file, not read from it: this hook runs on the last rank, which does not
        # wait for rank 0's write (the file is missing at the first save, a save behind after)
        return {Path(tracker("tracker_filename", args, kwargs)).name: str(iteration)}

    def journal():
        return TRACKING.checkpoints

    saved = on_save_success(journal, module.on_save_checkpoint_success, artifacts, tracker_file)
    handle.wrap(module, "on_save_checkpoint_success", saved)
    handle.wrap(
        module, "on_load_checkpoint_success", on_load_success(journal, module.on_load_checkpoint_success, artifacts)
    )
