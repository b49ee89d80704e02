"""Primus's own MaxText keys (``enable_mlflow``, ``mlflow_run_name``...), given the way MaxText's own are:
``key=value`` on its command line (or as keyword arguments to ``pyconfig.initialize``). Upstream's config
rejects keys it does not know, so they are taken off before it parses the rest, and typed by the same
schema as the experiment YAML (``primus/config/schemas/maxtext.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from primus.config import ConfigError
from primus.config.yaml12 import parse_scalar


@dataclass(frozen=True)
class PrimusOptions:
    enable_mlflow: bool = False
    mlflow_run_name: str | None = None
    mlflow_experiment_name: str | None = None
    mlflow_upload_performance_metrics: bool = False
    primus_journal_retention: str = "keep"
    peak_tflops: float | None = None  # one device's dense peak TFLOP/s, for MFU; None: the built-in table's


KEYS = frozenset(f.name for f in fields(PrimusOptions))


def split_options(argv: Sequence[str], kwargs: Mapping[str, Any]) -> tuple[list[str], dict[str, Any], PrimusOptions]:
    """MaxText's argv and keyword arguments without Primus's keys, and those keys typed. A later value wins,
    as on upstream's command line; raises ConfigError naming every bad key and value."""
    from primus.config.schemas import schema_for

    params = schema_for("maxtext").params
    given: dict[str, Any] = {}
    rest: list[str] = []
    for arg in argv:
        key, sep, text = str(arg).partition("=")
        if sep and key in KEYS:
            given[key] = parse_scalar(text)  # YAML, as upstream's parser reads its own values
        else:
            rest.append(arg)
    given.update({k: v for k, v in kwargs.items() if k in KEYS})
    problems, typed = [], {}
    for key, value in given.items():
        typed[key], problem = params[key].coerce(value)
        if problem:
            problems.append(
                f"{key}={value!r} on the MaxText command line: expected {params[key].expected()}, {problem}"
            )
    if problems:
        raise ConfigError(problems)
    return rest, {k: v for k, v in kwargs.items() if k not in KEYS}, PrimusOptions(**typed)
