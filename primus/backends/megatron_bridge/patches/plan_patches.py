"""Plans a Megatron-Bridge run on every rank before training (``session.py``), as Megatron's ranks plan in
validate_args: a bad setting stops every rank with one message before anything is built, and a rank that does not
write (all but the last) still knows the run it belongs to (its stacks on a stall)."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE


def _plan_then_setup(wrapped, instance, args, kwargs):
    import megatron.bridge.training.state as bridge_state

    from primus.backends.megatron_bridge.session import TRACKING

    config = (kwargs["state"] if "state" in kwargs else args[0]).cfg
    TRACKING.plan_for(config, bridge_state.get_rank_safe(), bridge_state.get_world_size_safe())
    return wrapped(*args, **kwargs)


@REGISTRY.patch(
    "megatron_bridge.tracking.plan",
    target="megatron.bridge.training.pretrain",
    upstream=MEGATRON_BRIDGE,
    backend="megatron_bridge",
    description="setup (in pretrain() and finetune(), every rank) -> the run is planned from the config first "
    "(pretrain.py:_pretrain)",
)
def _install(pretrain: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(pretrain, "setup", _plan_then_setup)
