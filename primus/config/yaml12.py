"""YAML with the YAML 1.2 core schema for plain scalars.

PyYAML resolves plain scalars by YAML 1.1 rules: ``1e-5`` and ``3e4`` stay strings (its float
pattern wants a dot), ``010`` is octal 8, ``yes``/``on`` are booleans and ``2024-01-01`` a date.
Our loader swaps in the 1.2 core resolvers (null, true/false, decimal/0o/0x ints, floats with an
optional dot and exponent, .inf/.nan) and refuses duplicate keys, which PyYAML silently drops.
Merge keys (``<<: *base``, ``<<: [*a, *b]``) work as in YAML 1.1 (a key of the mapping itself wins over a
merged one; of several merged mappings the first wins); a list or mapping used as a key is refused with its
line, as ``describe_error`` words every malformed input: file, line and column.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class Yaml12Loader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """Safe loader resolving plain scalars by the YAML 1.2 core schema."""

    yaml_implicit_resolvers: dict = {}  # start empty: inherit none of the YAML 1.1 resolvers


def _construct_int(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)  # base 10 even with leading zeros, as YAML 1.2 says


def _construct_float(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return float(text)


def _construct_bool(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> bool:
    return loader.construct_scalar(node).lower() == "true"


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: yaml.BaseLoader, node: yaml.MappingNode) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue  # merged keys may repeat: the mapping's own key wins (flatten_mapping)
        key = loader.construct_object(key_node)
        if isinstance(key, (list, dict)):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "a list or mapping as a key (`? [a, b]`) is not supported: keys are names",
                key_node.start_mark,
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}: keep one", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", _BOOL, list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
):
    Yaml12Loader.add_implicit_resolver(_tag, _pattern, _first)
Yaml12Loader.add_implicit_resolver(_MERGE_TAG, re.compile(r"^(?:<<)$"), ["<"])
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
Yaml12Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def loads(text: str) -> Any:
    """Parse YAML text (a document or a single scalar/flow value) by the 1.2 core schema."""
    return yaml.load(str(text), Loader=Yaml12Loader)  # noqa: S506 - a safe loader; str(): CParser refuses subclasses


def load_file(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)  # noqa: S506 - a safe loader


def describe_error(source: object, error: yaml.YAMLError) -> str:
    """``FILE:LINE:COLUMN: invalid YAML: what is wrong`` (1-based, as editors count), for any parse error."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(source)
    if isinstance(error, yaml.MarkedYAMLError):
        what = error.problem or error.context or "malformed"
        if error.context and error.problem and error.context_mark is not None:
            what += f" ({error.context} started at line {error.context_mark.line + 1})"
    else:
        what = " ".join(str(error).split())
    return f"{where}: invalid YAML: {what}"


class Unparsed(str):
    """Text whose type the schema decides later: a command-line value, or a string that ``${VAR}``
    interpolation changed (``train_iters: ${ITERS:10}`` must become the int 10, ``wandb_project:
    ${P:123}`` the string "123"). Text written in YAML keeps the type YAML gave it."""


def parse_scalar(text: str) -> Any:
    """Type command-line or interpolated text as a YAML 1.2 flow value (``1e-4``, ``[1, 2]``, ``null``).
    Text YAML cannot parse (``a: b: c``) stays a string."""
    try:
        return loads(text)
    except yaml.YAMLError:
        return str(text)
