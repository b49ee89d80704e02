"""An experiment's MaxText parameters as MaxText's own ``key=value`` arguments, as JSON (which upstream's YAML parser
reads back with the same type), placed after the user's config file and before the command line's arguments, so
the command line still wins. A value only the module preset gave (``preset_only``, standing in for ``base.yml``) is
left out when the user's file or a parent sets the key. Under `primus train` ``base_output_directory`` and
``run_name`` default to the run directory's parent and name."""

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
        users = preset_only & keys_set_by_config_files(str(argv[1]), configs_dir)
        params = {key: value for key, value in params.items() if key not in users}
    derived = {"base_output_directory": str(run_dir.parent), "run_name": run_dir.name} if run_dir else {}
    settings = [f"{key}={json.dumps(value, default=str)}" for key, value in {**derived, **params}.items()]
    return [*argv[:head], *settings, *argv[head:]]
