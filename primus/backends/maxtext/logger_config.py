"""MaxText's config as a tracked ``MetricLogger`` sees it: upstream's own, read-only, except that its
TensorBoard and W&B writers are off — the hub delivers to those trackers instead. Training itself keeps the
real config; only the logger holds this view."""

from __future__ import annotations

from typing import Any

OFF = {"enable_tensorboard": False, "enable_wandb": False}


class UpstreamWritersOff:
    __slots__ = ("_config",)

    def __init__(self, config: Any):
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name: str) -> Any:
        return OFF[name] if name in OFF else getattr(self._config, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ValueError("Configuration is read-only and cannot be modified after initialization.")  # as upstream's
