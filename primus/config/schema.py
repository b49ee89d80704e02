"""A typed schema for a backend's module parameters.

A ``Schema`` is a set of ``Param`` named by dotted path (``lr``, or ``metrics.log_freq`` inside a
section). ``validate`` returns a typed copy of a parameter tree and every problem in it: unknown
keys (with a did-you-mean), wrong types, values outside the choices or the bounds. A parameter read from
a generated table of upstream's config (TorchTitan, MaxText) carries upstream's own annotation as a type
expression and is checked against it (``type_expressions``).
"""

from __future__ import annotations

import difflib
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from primus.config import type_expressions
from primus.config.errors import ALREADY_REPORTED
from primus.config.tree import join
from primus.config.yaml12 import Unparsed, parse_scalar
from primus.redaction import redact_value

ParamType = Literal["bool", "int", "float", "str", "any"]
_COMPARE = {">=": operator.ge, ">": operator.gt, "<=": operator.le}


@dataclass(frozen=True)
class Param:
    """One parameter. ``option``/``true_flag``/``false_flag`` are upstream's command-line spelling
    (from the generated upstream table), for a backend that builds an argv. ``ge``/``gt``/``le`` bound an
    int or float (``ge=1`` for an interval, ``gt=0`` for a timeout), so a value upstream would only trip
    over at its first step (or never) is refused with the config."""

    name: str
    type: ParamType
    default: Any = None
    nullable: bool = False
    is_list: bool = False
    choices: tuple[Any, ...] | None = None
    primus: bool = False  # Primus's own, not an upstream argument
    help: str = ""
    option: str | None = None
    true_flag: str | None = None
    false_flag: str | None = None
    ge: float | None = None  # value >= ge
    gt: float | None = None  # value > gt
    le: float | None = None  # value <= le
    annotation: str | None = None  # upstream's type as a type expression; then it alone says what is valid

    def __post_init__(self) -> None:
        if self.type not in ("int", "float") and self._bounds():
            raise TypeError(f"{self.name}: bounds need an int or float parameter, not {self.type}")

    def _bounds(self) -> list[tuple[str, float]]:
        return [(op, bound) for op, bound in ((">=", self.ge), (">", self.gt), ("<=", self.le)) if bound is not None]

    def expected(self) -> str:
        if self.annotation is not None:
            return type_expressions.describe(self.annotation)
        base: str = "bool (true or false)" if self.type == "bool" else self.type
        if self.choices is not None:
            base = f"one of {list(self.choices)}"
        if self._bounds():
            base += " " + " and ".join(f"{op} {bound}" for op, bound in self._bounds())
        if self.is_list:
            base = f"a list of {base}"
        return f"{base} or null" if self.nullable else base

    def coerce(self, value: Any) -> tuple[Any, str | None]:
        """``(typed value, None)``, or ``(value, what is wrong)``."""
        if value is ALREADY_REPORTED:
            return value, None
        if self.annotation is not None:
            return self._coerce_annotated(self.annotation, value)
        if isinstance(value, Unparsed) and not (self.type == "str" and not self.is_list):
            value = parse_scalar(value)
        if value is None:
            return (None, None) if self.nullable else (value, "null is not allowed")
        if not self.is_list:
            return self._coerce_item(value)
        typed = []
        for item in value if isinstance(value, list) else [value]:
            item, problem = self._coerce_item(parse_scalar(item) if isinstance(item, Unparsed) else item)
            if problem:
                return value, problem
            typed.append(item)
        return typed, None

    @staticmethod
    def _coerce_annotated(annotation: str, value: Any) -> tuple[Any, str | None]:
        """Typed by upstream's annotation; command-line text that fails to parse as a value may be the string
        upstream wants (``tokenizer.pad_token=123``)."""
        candidates = [parse_scalar(value), str(value)] if isinstance(value, Unparsed) else [_settle(value)]
        problems = []
        for candidate in candidates:
            problem = type_expressions.check(annotation, candidate)
            if problem is None:
                return candidate, None
            problems.append(problem)
        return value, problems[0]

    def _coerce_item(self, value: Any) -> tuple[Any, str | None]:
        ok = {
            "any": True,
            "bool": isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
            "str": isinstance(value, str),
        }[self.type]
        if not ok:
            return value, _type_hint(self.type, value)
        if self.type in ("float", "str"):
            value = float(value) if self.type == "float" else str(value)  # str(): drop Unparsed
        if self.choices is not None and value not in self.choices:
            return value, "not a valid choice"
        if not self._within_bounds(value):
            return value, "out of range"
        return value, None

    def _within_bounds(self, value: Any) -> bool:
        """False for NaN too: it compares false with every bound."""
        return all(_COMPARE[op](value, bound) for op, bound in self._bounds())


def _type_hint(expected: str, value: Any) -> str:
    got = f"got {type(value).__name__}"
    if expected == "bool" and isinstance(value, str):
        return f"{got}; YAML 1.2 booleans are true and false only"
    if expected == "int" and isinstance(value, float) and value.is_integer():
        return f"{got}; write it as a whole number: {int(value)}"
    if expected == "str" and isinstance(value, (int, float, bool)):
        return f"{got}; quote it to make it a string: '{value}'"
    return got


class Schema:
    def __init__(self, noun: str, params: Iterable[Param]) -> None:
        self.noun = noun  # what a key is, for messages: "megatron parameter"
        self.params: dict[str, Param] = {p.name: p for p in params}  # a later Param of a name replaces one before
        self.sections = {name.rsplit(".", depth)[0] for name in self.params for depth in range(1, name.count(".") + 1)}
        self.primus_keys = frozenset(name for name, p in self.params.items() if p.primus)

    def knows(self, dotted: str) -> bool:
        return dotted in self.params or dotted in self.sections

    def validate(self, tree: Mapping[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        """A typed copy of ``tree`` and one problem line per bad key, each naming ``where``."""
        problems: list[str] = []
        typed = self._validate_level(tree, "", where, problems)
        return typed, problems

    def _validate_level(self, tree: Mapping[str, Any], prefix: str, where: str, problems: list[str]) -> dict:
        typed: dict[str, Any] = {}
        for key, value in tree.items():
            name = join(prefix, key)
            if name in self.params:
                param = self.params[name]
                typed[key], problem = param.coerce(value)
                if problem:
                    shown = redact_value(str(key), value)
                    problems.append(f"{where}: {name} = {shown!r}: expected {param.expected()}, {problem}")
            elif name in self.sections:
                if isinstance(value, Mapping):
                    typed[key] = self._validate_level(value, name, where, problems)
                else:
                    problems.append(f"{where}: {name} is a section; write its keys under it as a mapping")
            elif value is ALREADY_REPORTED:
                continue
            else:
                close = self.closest(name)
                hint = f"did you mean {close}?" if close else "remove it or check the spelling"
                problems.append(f"{where}: {name} is not a {self.noun}; {hint}")
        return typed

    def closest(self, name: str) -> str | None:
        """For a did-you-mean: the closest name at the same level, else the closest anywhere
        (``log_freq`` at the top of a TorchTitan module -> ``metrics.log_freq``)."""
        names = [*self.params, *self.sections]
        leaf = name.rsplit(".", 1)[-1]
        for scope in ([n for n in names if _parent(n) == _parent(name)], names):
            by_leaf = {n.rsplit(".", 1)[-1]: n for n in scope}
            close = difflib.get_close_matches(leaf, by_leaf, n=1)
            if close:
                return by_leaf[close[0]]
        return None


def _parent(dotted: str) -> str:
    return dotted.rsplit(".", 1)[0] if "." in dotted else ""


def _settle(value: Any) -> Any:
    """``Unparsed`` text inside a value (a list an ``${VAR}`` was interpolated into) typed by YAML 1.2 rules."""
    if isinstance(value, Unparsed):
        return parse_scalar(value)
    if isinstance(value, Mapping):
        return {k: _settle(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_settle(v) for v in value]
    return value
