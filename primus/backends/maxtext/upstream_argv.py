"""An experiment's MaxText parameters as MaxText's own ``key=value`` arguments, placed before the ones on
the command line, so the command line still wins (upstream's parser keeps the last value of a key).

They follow the user's own config file, so they win over it too, except the values only the module preset
gave (``preset_only``): the spec's defaults, which stand in for MaxText's ``base.yml``. Such a key is left
out when the user's file, or a parent it names, sets it: that file's value is the one the user meant.

Values are written as JSON, which upstream's parser (OmegaConf, YAML) reads back with the same type. Under
`primus train` MaxText writes into the run directory: ``base_output_directory`` is its parent and
``run_name`` its name, unless the experiment sets them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any

from primus.backends.maxtext.config_files import keys_set_by_config_files


def with_experiment(
    argv: Sequence[str],
    params: Mapping[str, Any],
    run_dir: Path | None,
    preset_only: Set[str] = frozenset(),
    configs_dir: str = "",
) -> list[str]:
    """``argv`` as ``pyconfig.initialize`` takes it (``[program, CONFIG.yml?, key=value ...]``) with the
    experiment's settings inserted after the program and the config file. ``configs_dir``: MaxText's
    configs folder (``MAXTEXT_CONFIGS_DIR``), where the config file's parents are also looked for."""
    argv = list(argv)
    head = 2 if len(argv) > 1 and str(argv[1]).endswith(".yml") else min(len(argv), 1)
    if head == 2 and preset_only:
        params = _without(params, preset_only & keys_set_by_config_files(str(argv[1]), configs_dir))
    derived = {"base_output_directory": str(run_dir.parent), "run_name": run_dir.name} if run_dir else {}
    settings = [f"{key}={json.dumps(value, default=str)}" for key, value in {**derived, **params}.items()]
    return [*argv[:head], *settings, *argv[head:]]


def _without(params: Mapping[str, Any], keys: Set[str]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key not in keys}
