"""``python -m primus.backends.megatron_bridge``: what `primus train` runs for a ``framework: megatron_bridge``
module (PRIMUS_CONFIG names the experiment). The recipe's config with the experiment's fields applied
(``recipe.py``), then Bridge's own ``pretrain(config, forward_step)`` with Primus's patches active."""

from __future__ import annotations

import sys

from primus.backends.megatron_bridge.tracking_plan import BACKEND


def main() -> None:
    from primus.backends.megatron_bridge.recipe import build_config, load_function
    from primus.config import ConfigError
    from primus.config.environment import CONFIG_ENV, module_from_env
    from primus.tracking.plan import TrackingPlanError

    try:
        module = module_from_env(BACKEND)
        if module is None:
            sys.exit(f"primus: {CONFIG_ENV} is unset: run `primus train --config EXP.yaml`")
        config = build_config(module.params, module.schema)
        forward_step = load_function(module.params["forward_step"], "forward_step")
        from megatron.bridge.training.pretrain import pretrain

        pretrain(config, forward_step)
    except (ConfigError, TrackingPlanError) as e:  # raised before training started: the message is the fix
        sys.exit(f"primus: {e}")
