"""An experiment YAML as upstream's argument defaults.

When a Megatron process starts with PRIMUS_CONFIG (set by `primus train` and `primus-run --config`),
the resolved parameters of its Megatron module become ``parser.set_defaults(...)``: no translation
to command-line flags, and flags given on the command line still win, as users expect.
PRIMUS_CONFIG_OVERRIDES carries the `key=value` overrides given to `primus train` (JSON list)."""

from __future__ import annotations

import json
import os
from typing import Any

OVERRIDES_ENV = "PRIMUS_CONFIG_OVERRIDES"


def experiment_defaults(environ=os.environ) -> dict[str, Any]:
    path = environ.get("PRIMUS_CONFIG")
    if not path:
        return {}
    from primus.config import load_experiment

    exp = load_experiment(path, json.loads(environ.get(OVERRIDES_ENV, "[]")))
    modules = [m for m in exp.modules.values() if m.framework == "megatron"]
    if len(modules) != 1:
        names = sorted(exp.modules)
        raise ValueError(f"PRIMUS_CONFIG={path}: expected exactly one megatron module, found {len(modules)} "
                         f"among {names}; keep one megatron module per experiment file")
    return dict(modules[0].params)
