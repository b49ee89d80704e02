"""How a launched process finds its experiment: PRIMUS_CONFIG names the YAML (set by `primus train` and
`primus-run --config`), PRIMUS_CONFIG_OVERRIDES carries the launcher's `key=value` overrides (JSON list),
PRIMUS_RUN_DIR the run directory every rank shares. Backends read it here; the launcher writes it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from primus.config.errors import ConfigError
from primus.config.experiment import ModuleConfig, load_experiment

CONFIG_ENV = "PRIMUS_CONFIG"
OVERRIDES_ENV = "PRIMUS_CONFIG_OVERRIDES"
RUN_DIR_ENV = "PRIMUS_RUN_DIR"


def module_params_from_env(framework: str, environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The resolved parameters of the experiment's ``framework`` module; None without PRIMUS_CONFIG.
    Raises ConfigError: every problem in the file, or not exactly one such module."""
    module = module_from_env(framework, environ)
    return None if module is None else dict(module.params)


def module_from_env(framework: str, environ: Mapping[str, str] = os.environ) -> ModuleConfig | None:
    """The experiment's ``framework`` module; None without PRIMUS_CONFIG. Raises as ``module_params_from_env``."""
    path = environ.get(CONFIG_ENV)
    if not path:
        return None
    exp = load_experiment(path, json.loads(environ.get(OVERRIDES_ENV, "[]")), environ=environ)
    modules = [m for m in exp.modules.values() if m.framework == framework]
    if len(modules) != 1:
        raise ConfigError(
            [
                f"{CONFIG_ENV}={path}: expected exactly one {framework} module, found {len(modules)} "
                f"among {sorted(exp.modules)}; keep one {framework} module per experiment file"
            ]
        )
    return modules[0]
