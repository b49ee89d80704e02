"""Primus's own MaxText keys (``enable_mlflow``, ``mlflow_run_name``...), given the way MaxText's own are:
``key=value`` on its command line (or as keyword arguments to ``pyconfig.initialize``). Upstream's config
rejects keys it does not know, so they are taken off before it parses the rest, and typed by the same
schema as the experiment YAML (``primus/backends/maxtext/schema.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, make_dataclass
from typing import Any

from primus.config import ConfigError
from primus.config.schemas.tracking import params_for
from primus.config.yaml12 import parse_scalar

OPTIONS = {p.name: p for p in params_for("maxtext")}
KEYS = frozenset(OPTIONS)


# the options' fields, built from their declarations (Any: a class made at run time is no static type)
_FIELDS: Any = make_dataclass(
    "Options", [(p.name, Any, field(default=p.default)) for p in OPTIONS.values()], frozen=True
)


class PrimusOptions(_FIELDS):
    """The catalogue's options for MaxText (``primus/config/schemas/tracking.py``), typed, with their defaults."""


def split_options(argv: Sequence[str], kwargs: Mapping[str, Any]) -> tuple[list[str], dict[str, Any], PrimusOptions]:
    """MaxText's argv and keyword arguments without Primus's keys, and those keys typed. A later value wins,
    as on upstream's command line; raises ConfigError naming every bad key and value."""
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
        typed[key], problem = OPTIONS[key].coerce(value)
        if problem:
            problems.append(
                f"{key}={value!r} on the MaxText command line: expected {OPTIONS[key].expected()}, {problem}"
            )
    if problems:
        raise ConfigError(problems)
    return rest, {k: v for k, v in kwargs.items() if k not in KEYS}, PrimusOptions(**typed)
