"""Patches that journal MaxText's checkpoints (``save_checkpoint``: a start mark, then the save once upstream says it
saved; ``load_state_if_possible``: the step given back), each at ``<manager's directory>/<step>`` as upstream
addresses it. MaxText loads before its ``MetricLogger`` starts the run: the journal keeps that record until then."""

from __future__ import annotations

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.tracking.checkpoints.checkpoint_journal import in_folder_of_checkpoints
from primus.tracking.journal.records import CheckpointLoaded
from primus.upstreams.maxtext import MAXTEXT


def step_path(manager, step: int) -> str:
    return str(manager.directory / str(step))


@REGISTRY.patch(
    "maxtext.tracking.checkpoints",
    target="maxtext.common.checkpointing",
    upstream=MAXTEXT,
    backend="maxtext",
    description="checkpointing.save_checkpoint/load_state_if_possible: each checkpoint saved or loaded, journaled "
    "for every tracker",
)
def _install_checkpoints(module, handle):
    from primus.backends.maxtext.session import TRACKING

    save = Arguments(module.save_checkpoint, "checkpoint_manager", "step")
    load = Arguments(module.load_state_if_possible, "checkpoint_manager", "step")
    latest_step = module.latest_step  # upstream's: the v1 Checkpointer's and the emergency managers' alike

    def save_checkpoint(wrapped, instance, args, kwargs):
        step = int(save("step", args, kwargs))
        TRACKING.checkpoints.save_started(step)
        saved = wrapped(*args, **kwargs)
        if saved:
            path = step_path(save("checkpoint_manager", args, kwargs), step)
            TRACKING.checkpoints.save_ended(in_folder_of_checkpoints(path, step))
        return saved

    def load_state_if_possible(wrapped, instance, args, kwargs):
        manager, step = load("checkpoint_manager", args, kwargs), load("step", args, kwargs)
        result = wrapped(*args, **kwargs)
        step = latest_step(manager) if manager is not None and step < 0 else step
        if manager is not None and step is not None and step >= 0 and result[0] is not None:
            TRACKING.checkpoints.loaded(CheckpointLoaded(path=step_path(manager, step), iteration=int(step)))
        return result

    handle.wrap(module, "save_checkpoint", save_checkpoint)
    handle.wrap(module, "load_state_if_possible", load_state_if_possible)
