"""Plans a Megatron-Bridge run on every rank before training (``primus/backends/megatron_bridge/tracking.py``), as
Megatron's ranks plan in validate_args: a bad setting stops every rank with one message before anything is built,
and a rank that does not write (all but the last) still knows the run it belongs to (its stacks on a stall). An
entry point of the group ``primus.patches`` (``setup.cfg``); importing this module registers it."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE


def _plan_then_setup(wrapped, instance, args, kwargs):
    import megatron.bridge.training.state as state_module

    from primus.backends.megatron_bridge.tracking import TRACKING

    state = kwargs["state"] if "state" in kwargs else args[0]
    TRACKING.plan_for(state.cfg, state_module.get_rank_safe(), state_module.get_world_size_safe())
    return wrapped(*args, **kwargs)


@REGISTRY.patch(
    "megatron_bridge.tracking.plan",
    target="megatron.bridge.training.pretrain",
    upstream=MEGATRON_BRIDGE,
    backend="megatron_bridge",
    description="setup (pretrain() and finetune(), every rank) -> the run is planned from the config first "
    "(pretrain.py:_pretrain)",
)
def _install_plan(module: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(module, "setup", _plan_then_setup)
