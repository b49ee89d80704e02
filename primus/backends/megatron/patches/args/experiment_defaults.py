"""An experiment YAML as upstream's argument defaults.

When a Megatron process starts with PRIMUS_CONFIG (set by `primus train` and `primus-run --config`),
the resolved parameters of its Megatron module become ``parser.set_defaults(...)``: no translation
to command-line flags, and flags given on the command line still win, as users expect."""

from __future__ import annotations

import os
from typing import Any


def experiment_defaults(environ=os.environ) -> dict[str, Any]:
    from primus.config.environment import module_params_from_env  # only when parsing: keeps this module light

    return module_params_from_env("megatron", environ) or {}
