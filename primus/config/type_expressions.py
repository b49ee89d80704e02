"""Upstream's own field types as text, and values checked against that text.

A generated table (TorchTitan's config dataclasses, MaxText's pydantic config) stores each field's annotation
as a Python type expression built from builtins and ``typing`` only — ``Literal['bfloat16', 'float32']``,
``int | None``, ``list[list[str]] | None``, ``Annotated[int, Field(gt=0)]`` — so validation needs neither
upstream nor its heavy imports: ``check`` evaluates the text once into a pydantic ``TypeAdapter`` (strict:
YAML's ``'5'`` is not the int 5, ``yes`` is not a bool; an int is a float) and validates a value with it.

``render`` writes that text from a live annotation; only the table generators call it, with upstream installed.
Enums become a ``Literal`` of what upstream's parser takes (tyro: member names; pydantic: values); a dataclass
or model inside a container becomes ``dict[str, Any]`` (in YAML it is a mapping); anything else that a
config file cannot spell (a callable, a class) becomes ``Any``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

_BUILTINS: tuple[type, ...] = (str, int, float, bool, list, dict)
_PLAIN: dict[Any, str] = {**{tp: tp.__name__ for tp in (*_BUILTINS, tuple)}, type(None): "None", Any: "Any"}
_BOUNDS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length")
_OUT_OF_RANGE = ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "multiple_of")
_OPERATORS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
_ANNOTATED = re.compile(r"Annotated\[(.*), Field\(([^()]*)\)\]")


def render(tp: Any, enum_by: Literal["name", "value"]) -> str:
    """The type expression for annotation ``tp``."""
    if tp in _PLAIN:
        return _PLAIN[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        bounds = _bounds(args[1:])
        inner = render(args[0], enum_by)
        return f"Annotated[{inner}, Field({bounds})]" if bounds else inner
    if origin in (typing.Union, types.UnionType):
        return " | ".join(dict.fromkeys(render(a, enum_by) for a in args))
    if origin is Literal:
        return f"Literal[{', '.join(repr(enum_value(a, enum_by)) for a in args)}]"
    if origin in (list, tuple, dict, set, frozenset) or origin is typing.Sequence:
        name = {set: "list", frozenset: "list", typing.Sequence: "list"}.get(origin, origin.__name__)
        parts = ["..." if a is Ellipsis else render(a, enum_by) for a in args]
        return f"{name}[{', '.join(parts)}]" if parts else name
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return f"Literal[{', '.join(repr(enum_value(m, enum_by)) for m in tp)}]"
    if dataclasses.is_dataclass(tp) or hasattr(tp, "model_fields"):
        return "dict[str, Any]"
    return "Any"


def enum_value(value: Any, enum_by: str = "value") -> Any:
    """An enum member as a config file writes it (its name or its value); anything else as it is."""
    if isinstance(value, enum.Enum):
        return value.name if enum_by == "name" else value.value
    return value


def _bounds(metadata: tuple[Any, ...]) -> str:
    """``gt=0, le=1`` from annotated-types constraints, bare or inside a pydantic ``Field``; markers of other
    tools (tyro's) are dropped."""
    found = {}
    for item in metadata:
        for inner in (item, *getattr(item, "metadata", ())):
            for name in _BOUNDS:
                value = getattr(inner, name, None)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found[name] = value
    return ", ".join(f"{k}={v!r}" for k, v in found.items())


def describe(expression: str) -> str:
    """The expected type as a message says it: ``one of ['a', 'b']``, ``int or null``, else the expression."""
    alternatives = split_union(expression)
    nullable = "None" in alternatives and len(alternatives) > 1
    shown = [_describe_one(a) for a in alternatives if not (nullable and a == "None")]
    return " or ".join(shown) + (" or null" if nullable else "")


def _describe_one(expression: str) -> str:
    bounded = _ANNOTATED.fullmatch(expression)
    if bounded:
        inner, bounds = bounded.groups()
        limits = (f"{_OPERATORS.get(k, k)} {v}" for k, v in (b.split("=") for b in bounds.split(", ")))
        return f"{describe(inner)} {' and '.join(limits)}"
    if expression.startswith("Literal[") and expression.endswith("]"):
        return f"one of [{expression[len('Literal[') : -1]}]"
    return {"bool": "bool (true or false)", "None": "null"}.get(expression, expression)


def split_union(expression: str) -> list[str]:
    """Top-level ``|`` alternatives (not those inside brackets or quotes)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(expression):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(expression[start:i].strip())
            start = i + 1
    return [*parts, expression[start:].strip()]


def check(expression: str, value: Any) -> str | None:
    """None when ``value`` has the type ``expression`` describes; else what is wrong, for a message."""
    from pydantic import ValidationError

    try:
        _adapter(expression).validate_python(value)
    except ValidationError as e:
        return _problem(value, e.errors(include_url=False))
    return None


def _problem(value: Any, errors: list[ErrorDetails]) -> str:
    if value is None:
        return "null is not allowed"
    first = errors[0]
    where = "".join(f"[{part}]" for part in first["loc"] if isinstance(part, int))
    if first["type"] == "literal_error":
        return f"not a valid choice{' at ' + where if where else ''}"
    if all(e["type"].endswith("_type") or e["type"].startswith(("is_instance", "union")) for e in errors):
        got = _item(value, first["loc"])
        hint = (
            "; YAML 1.2 booleans are true and false only"
            if isinstance(got, str) and any(e["type"] == "bool_type" for e in errors)
            else ""
        )
        return f"got {type(got).__name__}{' at ' + where if where else ''}{hint}"
    if first["type"] in _OUT_OF_RANGE:
        return f"out of range{' at ' + where if where else ''}"
    message = first["msg"]
    return f"{message[0].lower()}{message[1:]}{' at ' + where if where else ''}"


def _item(value: Any, loc: tuple[Any, ...]) -> Any:
    """The part of ``value`` an error points at (``loc`` mixes indexes with union member names)."""
    for part in loc:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, dict) and part in value:
            value = value[part]
    return value


class _YamlTuple:
    """``tuple[...]`` in a table: YAML has no tuples, so a list of the right items is one."""

    def __class_getitem__(cls, items: Any) -> Any:
        from pydantic import BeforeValidator

        return typing.Annotated[tuple[items], BeforeValidator(lambda v: tuple(v) if isinstance(v, list) else v)]


# a bare ``tuple`` (Bridge's untyped tuple fields) is one of any items: spelled out before evaluation, which every
# pydantic 2 release accepts (a schema hook on _YamlTuple needs a newer pydantic than the core's floor)
_BARE_TUPLE = re.compile(r"\btuple\b(?!\[)")


@functools.cache
def _adapter(expression: str) -> Any:
    from pydantic import ConfigDict, Field, TypeAdapter

    namespace: dict[str, Any] = {tp.__name__: tp for tp in _BUILTINS}
    namespace |= {"Literal": Literal, "Annotated": typing.Annotated, "Any": Any, "Field": Field, "None": None}
    namespace["tuple"] = _YamlTuple
    tp = eval(_BARE_TUPLE.sub("tuple[Any, ...]", expression), {"__builtins__": {}}, namespace)  # noqa: S307 - our own generated table, no builtins
    return TypeAdapter(tp, config=ConfigDict(strict=True))


def json_schema(expression: str) -> dict[str, Any]:
    """The JSON Schema of the values ``check`` accepts (pydantic's own rendering of the type)."""
    return _adapter(expression).json_schema()
