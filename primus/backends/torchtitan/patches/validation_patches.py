"""The patch that journals TorchTitan's evaluations as an expected pause in steps (run health's stall allowance,
``primus/tracking/health/detectors.py``): ``Validator.validate``, which every release calls at its ``validation.freq`` steps
and which runs the whole validation set before the next training step is logged."""

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
