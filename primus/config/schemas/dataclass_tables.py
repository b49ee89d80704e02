"""A table of upstream config fields from a tree of config dataclasses (TorchTitan's, Megatron-Bridge's): each field
a dotted name with its annotation as a type expression (``type_expressions``), upstream's default and docstring.

A section's class is polymorphic: a config function (a recipe) may put a subclass there (TorchTitan's llama3 puts
``HuggingFaceTextDataLoader.Config`` under ``dataloader``, a Bridge recipe a ``LlamaModelProvider`` under ``model``),
so a section lists the fields of its declared classes and of every subclass upstream defines; which of those the
chosen config really has, upstream says when the job starts. Imports upstream: only the table generators call it."""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable
from typing import Any, Literal

from primus.config import type_expressions
from primus.config.schemas import upstream_tables

_NESTING = 2  # a section class inside itself (loss.loss_fn: a wrapper around another loss) is listed once more


@dataclasses.dataclass(frozen=True)
class Walk:
    enum_by: Literal["name", "value"]  # how upstream's parser takes an enum member
    docstring: Callable[[type, str], str | None]  # a field's help
    hidden: Callable[[Any], bool] = lambda annotation: False  # a field upstream does not let the user set

    def table(self, root: type) -> dict[str, dict[str, Any]]:
        fields: dict[str, dict[str, Any]] = {}
        self._walk(root, "", fields, (root,))
        # a field one subclass makes a section and another a plain value (a provider's vision_config) is a section:
        # a key is one or the other in a config file
        sections = {name.rsplit(".", 1)[0] for name in fields if "." in name}
        return {name: row for name, row in sorted(fields.items()) if name not in sections}

    def _walk(self, cls: type, prefix: str, out: dict[str, dict[str, Any]], path: tuple[type, ...]) -> None:
        for klass in _subclasses(cls):
            hints = _hints(klass)
            for field in dataclasses.fields(klass):
                annotation = hints[field.name]
                if not field.init or field.name.startswith("_") or self.hidden(annotation):
                    continue
                name = f"{prefix}{field.name}"
                sections = _section_classes(annotation)
                if sections:
                    for section in sections:
                        if path.count(section) < _NESTING:
                            self._walk(section, f"{name}.", out, (*path, section))
                    continue
                expression = type_expressions.render(annotation, enum_by=self.enum_by)
                if name in out:  # two subclasses declare the field: either type is upstream's
                    kinds = dict.fromkeys(
                        [*type_expressions.split_union(out[name]["type"]), *type_expressions.split_union(expression)]
                    )
                    out[name]["type"] = " | ".join(kinds)
                    continue
                out[name] = self._entry(klass, field, expression)

    def _default(self, field: dataclasses.Field) -> tuple[bool, Any]:
        """Upstream's default as a config file writes it (an enum member as its parser takes it)."""
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            return False, None
        return upstream_tables.plain_default(type_expressions.enum_value(value, self.enum_by))

    def _entry(self, klass: type, field: dataclasses.Field, expression: str) -> dict[str, Any]:
        """The field's row; a default outside upstream's own annotation (Bridge's ``fp8_buf: bool = False,``, a
        tuple) is left out: it is no value a config file could give."""
        plain, value = self._default(field)
        if plain and value is not None and isinstance(value, (list, tuple)) and _scalar(expression):
            plain = False
        return upstream_tables.entry(expression, (plain, value), self.docstring(klass, field.name))


def _scalar(expression: str) -> bool:
    """The annotation takes no list: one of bool, int, float, str (or null)."""
    return set(type_expressions.split_union(expression)) <= {"bool", "int", "float", "str", "None"}


def _subclasses(cls: type) -> list[type]:
    """``cls`` and every subclass, in a stable order (declared class first)."""
    found: dict[type, None] = {cls: None}
    pending = [cls]
    while pending:
        subclasses: list[type] = pending.pop().__subclasses__()
        for sub in subclasses:
            if sub not in found and dataclasses.is_dataclass(sub):
                found[sub] = None
                pending.append(sub)
    first, *rest = found
    return [first, *sorted(rest, key=lambda c: (c.__module__, c.__qualname__))]


def _hints(klass: type) -> dict[str, Any]:
    """The fields' annotations; one Python cannot evaluate (a name its module imports only for type checkers) is
    Any."""
    try:
        return typing.get_type_hints(klass, include_extras=True)
    except (NameError, TypeError):  # a name under TYPE_CHECKING; `"X" | Callable` on a string
        pass
    hints: dict[str, Any] = {}
    for cls in reversed(klass.__mro__):
        namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
        for name, annotation in vars(cls).get("__annotations__", {}).items():
            try:
                hints[name] = typing.get_type_hints(_One(annotation), namespace, include_extras=True)["value"]
            except (NameError, TypeError):
                hints[name] = Any
    return hints


class _One:
    """An object whose one annotation ``typing.get_type_hints`` can resolve on its own."""

    def __init__(self, annotation: Any) -> None:
        self.__annotations__ = {"value": annotation}


def _section_classes(annotation: Any) -> list[type]:
    """The config classes a field holds when it is a section (a dataclass, or a union of them and None)."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    members = (
        typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, type(int | None))
        else (annotation,)
    )
    members = tuple(typing.get_args(m)[0] if typing.get_origin(m) is typing.Annotated else m for m in members)
    classes = [m for m in members if isinstance(m, type) and dataclasses.is_dataclass(m)]
    return classes if classes and all(m is type(None) or m in classes for m in members) else []
