"""The experiment a TorchTitan process runs with: PRIMUS_CONFIG (set by `primus train` and
`primus-run --config`) names the YAML, PRIMUS_CONFIG_OVERRIDES carries `primus train`'s overrides, and
PRIMUS_RUN_DIR the run directory every rank shares."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

MODEL_SECTION = "model"  # 0.3: Primus's {module, config} -> upstream's --module / --config; 0.2.2: upstream's own


def experiment_params(environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The experiment's torchtitan parameters to lay over upstream's config; None without PRIMUS_CONFIG. Upstream's
    keys only the module preset sets are left out: they restate upstream's defaults, and the user's job (a config
    function, a TOML job file) must win, as it does without Primus. Raises ConfigError."""
    from primus.config.environment import module_from_env

    module = module_from_env("torchtitan", environ)
    return None if module is None else module.upstream_params_given()
