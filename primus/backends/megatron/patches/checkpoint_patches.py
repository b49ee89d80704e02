"""Patches that journal Megatron's checkpoints (``primus/tracking/checkpoints.py``): a start mark as
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
from primus.tracking.checkpoints import SaveFolderArtifacts
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
    from primus.backends.megatron.training.global_vars import TRACKING

    arguments = Arguments(module.save_checkpoint, "iteration")

    def save_checkpoint(wrapped, instance, args, kwargs):
        if TRACKING.checkpoints is not None:
            TRACKING.checkpoints.save_started(arguments("iteration", args, kwargs))
        return wrapped(*args, **kwargs)

    def load_checkpoint(wrapped, instance, args, kwargs):
        if TRACKING.checkpoints is not None:
            TRACKING.checkpoints.load_started()
        return wrapped(*args, **kwargs)

    handle.wrap(module, "save_checkpoint", save_checkpoint)
    handle.wrap(module, "load_checkpoint", load_checkpoint)


@REGISTRY.patch(
    "megatron.tracking.checkpoints",
    target="megatron.training.wandb_utils",
    upstream=MEGATRON,
    backend="megatron",
    description="wandb_utils.on_save_checkpoint_success/on_load_checkpoint_success: each save and load journaled, "
    "for upstream's W&B artifact (same name, alias, files, latest_wandb_artifact_path.txt) and every tracker",
)
def _install_checkpoint_hooks(module, handle):
    from primus.backends.megatron.training.global_vars import TRACKING

    save = Arguments(module.on_save_checkpoint_success, "checkpoint_path", "tracker_filename", "save_dir", "iteration")
    load = Arguments(module.on_load_checkpoint_success, "checkpoint_path", "load_dir")
    # upstream's own helpers: the artifact it would log
    artifacts = SaveFolderArtifacts(module._get_artifact_name_and_version, module._get_wandb_artifact_tracker_filename)

    def on_save_checkpoint_success(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if TRACKING.checkpoints is not None:
            path, tracker, save_dir, iteration = (
                save(n, args, kwargs) for n in ("checkpoint_path", "tracker_filename", "save_dir", "iteration")
            )
            # what rank 0 writes to the tracker file, not read from it: this hook runs on the last rank, which does
            # not wait for rank 0's write (the file is missing at the first save, a save behind after)
            files = {Path(tracker).name: str(iteration)}
            TRACKING.checkpoints.save_ended(artifacts.saved(path, save_dir, iteration, files))
        return result

    def on_load_checkpoint_success(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if TRACKING.checkpoints is not None:
            path, load_dir = load("checkpoint_path", args, kwargs), load("load_dir", args, kwargs)
            TRACKING.checkpoints.loaded(artifacts.loaded(path, load_dir))
        return result

    handle.wrap(module, "on_save_checkpoint_success", on_save_checkpoint_success)
    handle.wrap(module, "on_load_checkpoint_success", on_load_checkpoint_success)
