"""The experiment a TorchTitan process runs with: PRIMUS_CONFIG (set by `primus train` and
`primus-run --config`) names the YAML, PRIMUS_CONFIG_OVERRIDES carries `primus train`'s overrides, and
PRIMUS_RUN_DIR the run directory every rank shares."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.config.environment import RUN_DIR_ENV

MODEL_SECTION = "model"  # 0.3: Primus's {module, config} -> upstream's --module / --config; 0.2.2: upstream's own


def experiment_params(environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The resolved parameters of the experiment's torchtitan module; None without PRIMUS_CONFIG.
    Raises ConfigError (every problem in the file, or not exactly one torchtitan module)."""
    from primus.config.environment import module_params_from_env

    return module_params_from_env("torchtitan", environ)


def run_dir_from_env(environ: Mapping[str, str] = os.environ) -> Path | None:
    value = environ.get(RUN_DIR_ENV)
    return Path(value) if value else None
