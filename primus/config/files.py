"""Read one config file with everything it ``extends:``: parents first (paths relative to the file
that names them), deep-merged in order, the file itself last. Each file is checked for literal
secrets and interpolated on its own, so a problem names the file it is in.

Top-level keys starting with ``x-`` (as docker compose has them) are a place for YAML anchors that other
keys merge in (``<<: *defaults``); they are dropped before anything else looks at the file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from primus.config import yaml12
from primus.config.interpolation import interpolate
from primus.config.secrets import refuse_secrets
from primus.config.tree import deep_merge

ANCHORS_PREFIX = "x-"  # top-level keys holding anchors only


def load_with_extends(
    path: Path, environ: Mapping[str, str], _chain: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The merged mapping of ``path`` and its ``extends:`` ancestors, and the problems found."""
    path = path.resolve()
    if path in _chain:
        cycle = " -> ".join(p.name for p in (*_chain[_chain.index(path) :], path))
        return {}, [f"{_chain[-1]}: extends cycle {cycle}; remove one of these extends"]
    try:
        raw = yaml12.load_file(path)
    except FileNotFoundError:
        named_by = f" (named by {_chain[-1]})" if _chain else ""
        return {}, [f"{path}: no such file{named_by}"]
    except OSError as e:
        return {}, [f"{path}: cannot read: {e.strerror}"]
    except yaml.YAMLError as e:
        return {}, [yaml12.describe_error(path, e)]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return {}, [f"{path}: must be a mapping of key: value, got {type(raw).__name__}"]

    raw = {key: value for key, value in raw.items() if not str(key).startswith(ANCHORS_PREFIX)}
    source = str(path)
    raw, problems = refuse_secrets(raw, source)
    raw, found = interpolate(raw, source, environ)
    problems += found

    parents = raw.pop("extends", None) or []
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        problems.append(f"{source}: extends = {parents!r}: must be a file name or a list of file names")
        parents = []
    merged: dict[str, Any] = {}
    for parent in parents:
        tree, found = load_with_extends(path.parent / parent, environ, (*_chain, path))
        merged = deep_merge(merged, tree)
        problems += found
    return deep_merge(merged, raw), problems
