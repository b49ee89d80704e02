"""Markdown pieces for the generated docs: tables, and values written as YAML 1.2 would read them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from primus.config import yaml12

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"


def yaml_text(value: Any) -> str:
    """``value`` as YAML text that reads back (by the YAML 1.2 rules Primus uses) as the same value."""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(list(value) if isinstance(value, tuple) else value)  # JSON is YAML flow syntax
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    try:
        plain = text != "" and yaml12.loads(text) == text
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


def fill(template: str, **values: Any) -> str:
    """docs/templates/``template`` with its ``{name}`` fields filled in: the prose stays markdown, the code gives
    the tables and figures."""
    return (DOCS_DIR / "templates" / template).read_text(encoding="utf-8").format(**values)


def code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")  # one line; a pipe would end the cell


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
