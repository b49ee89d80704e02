"""An experiment's MaxText parameters as MaxText's own ``key=value`` arguments, placed before the ones on
the command line, so the command line still wins (upstream's parser keeps the last value of a key).

Values are written as JSON, which upstream's parser (OmegaConf, YAML) reads back with the same type. Under
`primus train` MaxText writes into the run directory: ``base_output_directory`` is its parent and
``run_name`` its name, unless the experiment sets them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def with_experiment(argv: Sequence[str], params: Mapping[str, Any], run_dir: Path | None) -> list[str]:
    """``argv`` as ``pyconfig.initialize`` takes it (``[program, CONFIG.yml?, key=value ...]``) with the
    experiment's settings inserted after the program and the config file."""
    argv = list(argv)
    head = 2 if len(argv) > 1 and str(argv[1]).endswith(".yml") else min(len(argv), 1)
    derived = {"base_output_directory": str(run_dir.parent), "run_name": run_dir.name} if run_dir else {}
    settings = [f"{key}={json.dumps(value, default=str)}" for key, value in {**derived, **params}.items()]
    return [*argv[:head], *settings, *argv[head:]]
