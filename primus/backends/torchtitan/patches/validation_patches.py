"""TorchTitan's evaluations journaled as an expected pause in steps: the stall alert allows for them
(``primus/tracking/health/detectors.py``) and goodput counts them as badput."""

from __future__ import annotations

from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.upstreams.torchtitan import TORCHTITAN


@REGISTRY.patch(
    "torchtitan.tracking.validation",
    target="torchtitan.components.validate",
    upstream=TORCHTITAN,
    backend="torchtitan",
    description="Validator.validate: each evaluation journaled as an expected pause in steps (no stall alert)",
)
def _install_validation(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.session import TRACKING

    def validate(wrapped, instance, args, kwargs):
        TRACKING.checkpoints.evaluating(True)
        try:
            return wrapped(*args, **kwargs)
        finally:
            TRACKING.checkpoints.evaluating(False)

    handle.wrap(module.Validator, "validate", validate)
