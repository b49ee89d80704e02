"""Operations on nested config mappings: deep merge, dotted paths, mapping over string values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, anything else (lists too) is replaced."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def join(prefix: str, key: object) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in ``tree``, creating mappings on the way (a non-mapping on the way is replaced)."""
    *parents, leaf = dotted.split(".")
    node = tree
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value


def leaf_paths(tree: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted path of every value in ``tree`` that is not itself a mapping."""
    paths: set[str] = set()
    for key, value in tree.items():
        path = join(prefix, key)
        paths |= leaf_paths(value, path) if isinstance(value, Mapping) and value else {path}
    return paths


def without_paths(tree: Mapping[str, Any], paths: set[str] | frozenset[str], prefix: str = "") -> dict[str, Any]:
    """A copy of ``tree`` without the values at these dotted paths (a mapping left empty is dropped too)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = join(prefix, key)
        if path in paths:
            continue
        if isinstance(value, Mapping) and value:
            value = without_paths(value, paths, path)
            if not value:
                continue
        out[key] = value
    return out


def map_strings(tree: Any, fn: Callable[[str, str, str], Any], prefix: str = "") -> Any:
    """A copy of ``tree`` with every string value ``v`` at ``path`` under ``key`` replaced by
    ``fn(path, key, v)``."""
    return _map(tree, fn, prefix, prefix.rsplit(".", 1)[-1])


def _map(value: Any, fn: Callable[[str, str, str], Any], path: str, key: str) -> Any:
    if isinstance(value, Mapping):
        return {k: _map(v, fn, join(path, k), str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, fn, f"{path}[{i}]", key) for i, v in enumerate(value)]
    if isinstance(value, str):
        return fn(path, key, value)
    return value
