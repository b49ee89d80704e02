"""Patches that journal TorchTitan's checkpoints (``primus/tracking/checkpoints/checkpoint_journal.py``) from
``CheckpointManager.dcp_save`` / ``dcp_load``, the calls that write and read a checkpoint folder (``step-N`` in the
checkpoint folder) in every release: a start mark before the write, the save once it is on disk (an asynchronous
save: when the future upstream hands back for its upload is done), a load once upstream read it. The class lives
in ``components/checkpointer/dcp.py`` from 0.3 and ``components/checkpoint.py`` in 0.2.2, one patch each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from types import ModuleType
from typing import Any

from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.tracking.checkpoints.checkpoint_journal import in_folder_of_checkpoints
from primus.tracking.journal.records import CheckpointLoaded
from primus.upstreams.torchtitan import CONFIGURABLE, TOML_JOB_CONFIG, TORCHTITAN

STEP_PREFIX = "step-"  # CheckpointManager._create_checkpoint_id: <folder>/step-<step>


def _step_of(checkpoint_id: str) -> int:
    return int(PurePosixPath(checkpoint_id.rstrip("/")).name.removeprefix(STEP_PREFIX))


def _install_checkpoints(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.session import TRACKING

    manager = module.CheckpointManager
    save = Arguments(manager.dcp_save, "checkpoint_id", method=True)
    load = Arguments(manager.dcp_load, "checkpoint_id", method=True)

    def dcp_save(wrapped, instance, args, kwargs):
        path = str(save("checkpoint_id", args, kwargs))
        step = _step_of(path)
        TRACKING.checkpoints.save_started(step)
        result = wrapped(*args, **kwargs)
        _when_written(result, lambda: TRACKING.checkpoints.save_ended(in_folder_of_checkpoints(path, step)))
        return result

    def dcp_load(wrapped, instance, args, kwargs):
        TRACKING.checkpoints.load_started()
        result = wrapped(*args, **kwargs)
        path = str(load("checkpoint_id", args, kwargs))
        TRACKING.checkpoints.loaded(CheckpointLoaded(path=path, iteration=_step_of(path)))
        return result

    handle.wrap(manager, "dcp_save", dcp_save)
    handle.wrap(manager, "dcp_load", dcp_load)


def _when_written(result: Any, done: Callable[[], None]) -> None:
    """Call ``done`` once the save is on disk: now for a synchronous save (upstream returns the checkpoint's
    metadata), else when its future is done without error (``AsyncSaveResponse``: the upload's; async mode: the
    future itself)."""
    future = getattr(result, "upload_completion", result)
    if not hasattr(future, "add_done_callback"):
        done()
        return

    def written(f: Any) -> None:
        if f.exception() is None:
            done()

    future.add_done_callback(written)


for _id, _target, _versions in (
    ("torchtitan.tracking.checkpoints", "torchtitan.components.checkpointer.dcp", CONFIGURABLE),
    ("torchtitan.tracking.checkpoints_v0_2", "torchtitan.components.checkpoint", TOML_JOB_CONFIG),
):
    REGISTRY.patch(
        _id,
        target=_target,
        upstream=TORCHTITAN,
        versions=_versions,
        backend="torchtitan",
        description="CheckpointManager.dcp_save/dcp_load: each checkpoint saved or loaded, journaled for every tracker",
    )(_install_checkpoints)
