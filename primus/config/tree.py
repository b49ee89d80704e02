"""Operations on nested config mappings: deep merge, dotted paths, leaf walk."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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


def iter_leaves(tree: Any, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(dotted path, nearest mapping key, value) for every non-container value; list items are
    reported under their list's key, so key-based rules still see the name."""
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _leaves_under(join(prefix, key), str(key), value)
    else:
        yield from _leaves_under(prefix, prefix.rsplit(".", 1)[-1], tree)


def _leaves_under(path: str, key: str, value: Any) -> Iterator[tuple[str, str, Any]]:
    if isinstance(value, Mapping):
        yield from iter_leaves(value, path)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves_under(f"{path}[{i}]", key, item)
    else:
        yield path, key, value


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
