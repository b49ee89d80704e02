"""The experiment a TorchTitan process runs with: PRIMUS_CONFIG (set by `primus train` and
`primus-run --config`) names the YAML, PRIMUS_CONFIG_OVERRIDES carries `primus train`'s overrides, and
PRIMUS_RUN_DIR the run directory every rank shares."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CONFIG_ENV = "PRIMUS_CONFIG"
OVERRIDES_ENV = "PRIMUS_CONFIG_OVERRIDES"
RUN_DIR_ENV = "PRIMUS_RUN_DIR"
MODEL_SECTION = "model"  # Primus's: {module, config} -> upstream's --module / --config


def experiment_params(environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The resolved parameters of the experiment's torchtitan module; None without PRIMUS_CONFIG.
    Raises ConfigError (every problem in the file) or ValueError (not exactly one torchtitan module)."""
    path = environ.get(CONFIG_ENV)
    if not path:
        return None
    from primus.config import load_experiment

    exp = load_experiment(path, json.loads(environ.get(OVERRIDES_ENV, "[]")), environ=environ)
    modules = [m for m in exp.modules.values() if m.framework == "torchtitan"]
    if len(modules) != 1:
        raise ValueError(f"{CONFIG_ENV}={path}: expected exactly one torchtitan module, found {len(modules)} among "
                         f"{sorted(exp.modules)}; keep one torchtitan module per experiment file")
    return dict(modules[0].params)


def run_dir_from_env(environ: Mapping[str, str] = os.environ) -> Path | None:
    value = environ.get(RUN_DIR_ENV)
    return Path(value) if value else None
