"""Patches that put the hub in place of Megatron-Bridge's own writers (``session.py``): ``GlobalState``'s
``tensorboard_logger`` is the hub's writer on Bridge's writing rank, its W&B, MLflow and Comet loggers None (the
hub's sinks). The step goes out after ``training_log`` and each evaluation; ``_finish_train`` ends the run (one
that dies earlier is ended by its exit handlers). Patched where Bridge looks them up: ``train.py`` and
``pretrain.py`` bind them by name at import."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from primus.log import get_logger
from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE

log = get_logger("primus.megatron_bridge")


def _bridge_patch(id: str, target: str, description: str):
    return REGISTRY.patch(
        id, target=target, upstream=MEGATRON_BRIDGE, backend="megatron_bridge", description=description
    )


# What Bridge's training loop reads on the host at a log step for the perf set (step_perf.py): a release that
# renamed one fails when the patch installs, not in the first logged step
TRAIN_STATE_COUNTERS = ("step", "consumed_train_samples", "floating_point_operations_so_far")


@_bridge_patch(
    "megatron_bridge.tracking.writers",
    "megatron.bridge.training.state",
    "GlobalState.tensorboard_logger -> the hub's writer (every scalar Bridge writes, to every "
    "tracker); wandb_logger, mlflow_logger, comet_logger -> None (state.py:178-345); a failure of ours -> Bridge's own writers",
)
def _install_writers(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.megatron_bridge.session import TRACKING

    missing = [name for name in TRAIN_STATE_COUNTERS if name not in module.TrainState.__dataclass_fields__]
    if missing:
        raise AttributeError(f"megatron.bridge.training.state.TrainState has no {', '.join(missing)}")
    get_rank, get_world_size = module.get_rank_safe, module.get_world_size_safe

    def tensorboard_logger(state):
        return TRACKING.writer_for(state, get_rank(), get_world_size())

    _guarded_property(handle, module.GlobalState, "tensorboard_logger", tensorboard_logger, TRACKING.detach)
    for name in ("wandb_logger", "mlflow_logger", "comet_logger"):
        _guarded_property(handle, module.GlobalState, name, lambda state: None, TRACKING.detach)


def _guarded_property(
    handle: PatchHandle, owner: type, name: str, ours: Callable[[Any], Any], detach: Callable[[], None]
) -> None:
    """``owner.<name>`` becomes a property that answers ``ours(state)``. A property is not a call the handle's
    guard wraps, so the guard is here: a failure of ours turns the patch off (the registry's one warning), our
    writer is ``detach``ed, and from then on each of these properties is Bridge's own again (its own writers, as
    its logger settings say), so training goes on tracked by Bridge. Bridge's own errors propagate unchanged."""
    bridge = vars(owner)[name]

    def get(state):
        if handle.enabled:
            try:
                return ours(state)
            except Exception as error:
                handle.fail(error)
                detach()
                log.error(
                    "Primus's tracking of this Megatron-Bridge run failed (%r): Bridge's own writers take over "
                    "from here, as its logger settings say; Primus's trackers get nothing more from this process",
                    error,
                )
        return bridge.fget(state)

    handle.replace(owner, name, property(get))


def _evaluation(wrapped, instance, args, kwargs):
    """Upstream's evaluation, journaled as an expected pause in steps (the stall alert allows for it; goodput counts
    it as badput); its scalars go out when it returns, not with the next step's."""
    from primus.backends.megatron_bridge.session import TRACKING

    TRACKING.evaluating(True)
    try:
        result = wrapped(*args, **kwargs)
    finally:
        TRACKING.evaluating(False)
    TRACKING.emit()
    return result


def _then_finish(wrapped, instance, args, kwargs):
    from primus.backends.megatron_bridge.session import TRACKING

    TRACKING.emit()
    result = wrapped(*args, **kwargs)
    TRACKING.finish()
    return result


@_bridge_patch(
    "megatron_bridge.tracking.train_steps",
    "megatron.bridge.training.train",
    "training_log (every rank) -> the step's scalars and progress figures go out when it returns, with every rank's "
    "busy time at log steps (primus_stragglers); evaluate_and_print_results -> journaled as an expected pause, its "
    "scalars out when it returns",
)
def _install_train_steps(module: ModuleType, handle: PatchHandle) -> None:
    state_of = Arguments(module.training_log, "global_state")

    def training_log(wrapped, instance, args, kwargs):
        from primus.backends.megatron_bridge.session import TRACKING

        result = wrapped(*args, **kwargs)
        TRACKING.end_step(state_of("global_state", args, kwargs))
        return result

    handle.wrap(module, "training_log", training_log)
    handle.wrap(module, "evaluate_and_print_results", _evaluation)


@_bridge_patch(
    "megatron_bridge.tracking.pretrain_end",
    "megatron.bridge.training.pretrain",
    "the final validation/test evaluations go out when they return; _finish_train ends the run FINISHED",
)
def _install_pretrain_end(module: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(module, "evaluate_and_print_results", _evaluation)
    handle.wrap(module, "_finish_train", _then_finish)
