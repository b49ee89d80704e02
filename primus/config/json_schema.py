"""A JSON Schema (draft 2020-12) of an experiment file whose modules run one backend, from the same schemas
``load_experiment`` validates with: an editor completes and checks every key (``primus config schema``).

Upstream fields typed by an annotation get pydantic's own JSON Schema of it; Primus's parameters theirs from
type, choices, bounds and nullability. A value with a ``${VAR}`` reference is a string until the environment
fills it in, so every non-string value also accepts such a string. Top-level ``x-`` keys hold anchors.
"""

from __future__ import annotations

from typing import Any

from primus.config import type_expressions
from primus.config.files import ANCHORS_PREFIX
from primus.config.schema import Param, Schema
from primus.config.schemas import schema_for
from primus.config.schemas.launch import LAUNCH_SCHEMA

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_INTERPOLATED = {"type": "string", "pattern": r"\$\{[A-Za-z_][A-Za-z0-9_]*(:[^}]*)?\}"}
_NAMES = {"bool": "boolean", "int": "integer", "float": "number", "str": "string"}
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum"}
_FILES = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


def experiment_schema(framework: str) -> dict[str, Any]:
    module = {
        "type": "object",
        "properties": {
            "framework": {"const": framework, "description": "the backend this module runs"},
            "config": {"type": "string", "description": "a module preset, e.g. pre_trainer.yaml"},
            "model": {"type": ["string", "null"], "description": "a model preset under primus/configs/models/"},
            "overrides": _object(schema_for(framework)),
        },
        "required": ["framework", "config"],
        "additionalProperties": False,
    }
    string_or_null = {"type": ["string", "null"]}
    return {
        "$schema": DRAFT,
        "title": f"Primus experiment ({framework})",
        "type": "object",
        "properties": {
            "extends": {**_FILES, "description": "experiment files merged under this one, parents first"},
            "work_group": string_or_null,
            "user_name": string_or_null,
            "exp_name": {"type": "string", "description": "the experiment's name (default: the file's name)"},
            "workspace": {"type": "string", "description": "run directories go under workspace/exp_name"},
            "launch": _object(LAUNCH_SCHEMA),
            "modules": {"type": "object", "additionalProperties": module, "minProperties": 1},
        },
        "patternProperties": {f"^{ANCHORS_PREFIX}": {"description": "a place for YAML anchors; ignored"}},
        "required": ["modules"],
        "additionalProperties": False,
    }


def _object(schema: Schema) -> dict[str, Any]:
    """Nested objects for the dotted parameter names, closed at every level as ``Schema.validate`` is."""
    root: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    for name, param in schema.params.items():
        node = root
        *sections, leaf = name.split(".")
        for section in sections:
            node = node["properties"].setdefault(
                section, {"type": "object", "properties": {}, "additionalProperties": False}
            )
        node["properties"][leaf] = _value(param)
    return root


def _value(param: Param) -> dict[str, Any]:
    if param.annotation is not None:
        value = type_expressions.json_schema(param.annotation)
    else:
        value = _plain(param)
    if value.get("type") != "string":
        value = {"anyOf": [value, _INTERPOLATED]}
    if param.help:
        value["description"] = param.help
    return value


def _plain(param: Param) -> dict[str, Any]:
    item: dict[str, Any] = {} if param.type == "any" else {"type": _NAMES[param.type]}
    if param.choices is not None:
        item["enum"] = list(param.choices)
    item.update({_BOUNDS[k]: getattr(param, k) for k in _BOUNDS if getattr(param, k) is not None})
    if param.is_list:
        item = {"anyOf": [item, {"type": "array", "items": item}]}  # one value is a one-item list
    if param.nullable:
        item = {"anyOf": [item, {"type": "null"}]}
    return item
