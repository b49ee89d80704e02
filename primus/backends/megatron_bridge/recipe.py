"""An experiment's Megatron-Bridge module as Bridge's own ``run_recipe.py`` builds its config: the recipe function
(``--recipe``) gives the ConfigContainer, the experiment's fields are applied to it as run_recipe.py's ``KEY=VALUE``
overrides (a field the recipe's config lacks is refused), and the model's sequence length follows the dataset's.
All of it before training starts: a problem is a ConfigError naming the key, the value and the fix."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from primus.config import ConfigError
from primus.config.schema import Schema

RECIPES = "megatron.bridge.recipes"


def load_function(spec: str, key: str, package: str | None = None) -> Callable[..., Any]:
    """``module:function``, or a bare name in ``package``; ConfigError when there is none."""
    module_name, _, name = spec.rpartition(":") if ":" in spec else (package or "", "", spec)
    try:
        function = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as e:
        where = f"a function of {package}, or module:function" if package else "module:function"
        raise ConfigError([f"{key}={spec!r}: not found ({e}); name {where}"]) from None
    if not callable(function):
        raise ConfigError([f"{key}={spec!r}: not a function"])
    return function


def hydra_value(value: Any) -> str:
    """A typed YAML value as Hydra's override grammar reads it back (strings quoted, as run_recipe.py writes them)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{key}:{hydra_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    return json.dumps(str(value))


def overrides(params: Mapping[str, Any], schema: Schema, prefix: str = "") -> list[str]:
    """The module's ConfigContainer fields as ``KEY=VALUE`` overrides (Primus's own keys left out)."""
    found = []
    for key, value in params.items():
        name = f"{prefix}{key}"
        if name in schema.primus_keys:
            continue
        if name not in schema.params and isinstance(value, Mapping):  # a section
            found += overrides(value, schema, f"{name}.")
        else:
            found.append(f"{name}={hydra_value(value)}")
    return found


def _dataset(config: Any, preset: str) -> Any:
    """run_recipe.py's ``--dataset``: Bridge's preset built for the recipe's config."""
    from megatron.bridge.recipes.utils.dataset_utils import DATASET_PRESETS, build_dataset_config

    if preset not in DATASET_PRESETS:
        raise ConfigError(
            [f"dataset_preset={preset!r}: not one of Bridge's presets; use one of {sorted(DATASET_PRESETS)}"]
        )
    return build_dataset_config(config, preset)


def build_config(params: Mapping[str, Any], schema: Schema) -> Any:
    """The recipe's ConfigContainer with the module's fields applied, as run_recipe.py has it before training."""
    from megatron.bridge.training.utils.omegaconf_utils import OverridesError, process_config_with_overrides

    if not params.get("recipe"):
        raise ConfigError(
            ["recipe: missing; name a recipe of megatron.bridge.recipes, e.g. vanilla_gpt_pretrain_config"]
        )
    config = load_function(params["recipe"], "recipe", RECIPES)()
    if params.get("dataset_preset"):
        config.dataset = _dataset(config, params["dataset_preset"])
    given = overrides(params, schema)
    try:
        config = process_config_with_overrides(config, cli_overrides=given or None)
    except OverridesError as e:
        raise ConfigError(
            [
                f"recipe {params['recipe']}: {e.__cause__ or e}; the recipe's config has no such field, or the value "
                "is not one it takes: fix or remove the key"
            ]
        ) from None
    dataset_length = getattr(config.dataset, "seq_length", None)
    if dataset_length is not None:  # run_recipe.py's sync_model_dataset_sequence_length
        config.model.seq_length = dataset_length
    return config
