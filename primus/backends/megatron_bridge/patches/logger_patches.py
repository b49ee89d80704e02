"""Patches that put the hub in place of Megatron-Bridge's own writers (``primus/backends/megatron_bridge/
tracking.py``). An entry point of the group ``primus.patches`` (``setup.cfg``); importing this module registers
them.

* ``GlobalState.tensorboard_logger`` is the hub's writer on Bridge's writing rank, ``wandb_logger`` and
  ``mlflow_logger`` are None: W&B and MLflow are the hub's sinks (Comet stays Bridge's own).
* After ``training_log`` (with the progress figures, from the ``global_state`` it is given) and each
  ``evaluate_and_print_results`` the step goes out; ``_finish_train`` ends the run
  FINISHED (a run that dies earlier is ended by the run's exit handlers). Patched where Bridge looks them up:
  ``train.py`` and ``pretrain.py`` bind them by name at import."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.patches.arguments import Arguments
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE


def _bridge_patch(id: str, target: str, description: str):
    return REGISTRY.patch(
        id, target=target, upstream=MEGATRON_BRIDGE, backend="megatron_bridge", description=description
    )


@_bridge_patch(
    "megatron_bridge.tracking.writers",
    "megatron.bridge.training.state",
    "GlobalState.tensorboard_logger -> the hub's writer (every scalar Bridge writes, to every "
    "tracker); wandb_logger, mlflow_logger -> None (state.py:178-229)",
)
def _install_writers(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.megatron_bridge.tracking import TRACKING

    get_rank, get_world_size = module.get_rank_safe, module.get_world_size_safe

    def tensorboard_logger(state):
        return TRACKING.writer_for(state, get_rank(), get_world_size())

    handle.replace(module.GlobalState, "tensorboard_logger", property(tensorboard_logger))
    handle.replace(module.GlobalState, "wandb_logger", property(lambda state: None))
    handle.replace(module.GlobalState, "mlflow_logger", property(lambda state: None))


def _then_emit(wrapped, instance, args, kwargs):
    from primus.backends.megatron_bridge.tracking import TRACKING

    result = wrapped(*args, **kwargs)
    TRACKING.emit()
    return result


def _then_finish(wrapped, instance, args, kwargs):
    from primus.backends.megatron_bridge.tracking import TRACKING

    TRACKING.emit()
    result = wrapped(*args, **kwargs)
    TRACKING.finish()
    return result


@_bridge_patch(
    "megatron_bridge.tracking.train_steps",
    "megatron.bridge.training.train",
    "training_log -> the step's scalars and progress figures go out when it returns; evaluate_and_print_results "
    "-> its scalars go out when it returns",
)
def _install_train_steps(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.megatron_bridge.tracking import TRACKING

    arguments = Arguments(module.training_log, "global_state")

    def then_end_step(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        TRACKING.end_step(arguments("global_state", args, kwargs))
        return result

    handle.wrap(module, "training_log", then_end_step)
    handle.wrap(module, "evaluate_and_print_results", _then_emit)


@_bridge_patch(
    "megatron_bridge.tracking.pretrain_end",
    "megatron.bridge.training.pretrain",
    "the final validation/test evaluations go out when they return; _finish_train ends the run FINISHED",
)
def _install_pretrain_end(module: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(module, "evaluate_and_print_results", _then_emit)
    handle.wrap(module, "_finish_train", _then_finish)
