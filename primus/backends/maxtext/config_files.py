"""The keys a user's own MaxText config file sets, through its chain of parents (``base_config:``), found as
upstream MaxText 0.2.5 finds them (``pyconfig.resolve_config_path`` and ``pyconfig._load_config``): a relative
parent next to the file that names it, else in MaxText's configs folder; an absolute one as it is.

The chain stops at upstream's own ``base.yml``: it sets every key to MaxText's defaults, which are what the
module preset's values stand in for, so none of its keys counts as the user's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from primus.config import yaml12

UPSTREAM_BASE_CONFIG = "base.yml"
PARENT_KEY = "base_config"
# a path inside a MaxText checkout, which upstream maps to its installed configs folder
_SOURCE_PREFIX = "src/maxtext/configs/"


def keys_set_by_config_files(config_file: str, configs_dir: str) -> frozenset[str]:
    """Every key set by ``config_file`` or one of its parents short of upstream's ``base.yml`` in
    ``configs_dir`` (MaxText's ``MAXTEXT_CONFIGS_DIR``)."""
    # upstream's base.yml, then each file read: a parent named twice (upstream would recurse without end), like a
    # missing file, stops the walk there, and upstream, loading the same chain next, reports it
    stop = {os.path.realpath(os.path.join(configs_dir, UPSTREAM_BASE_CONFIG))}
    path = _resolve_config_path(config_file, configs_dir)
    keys: set[str] = set()
    while os.path.isfile(path) and (real := os.path.realpath(path)) not in stop:
        stop.add(real)
        tree = yaml12.load_file(Path(path))
        tree = tree if isinstance(tree, Mapping) else {}  # an empty file sets nothing
        keys |= set(tree) - {PARENT_KEY}
        parent = tree.get(PARENT_KEY)
        if not parent:
            break
        path = _parent_path(str(parent), path, configs_dir)
    return frozenset(keys)


def _resolve_config_path(config_file: str, configs_dir: str) -> str:
    if not os.path.isfile(config_file) and config_file.startswith(_SOURCE_PREFIX):
        return os.path.join(configs_dir, config_file[len(_SOURCE_PREFIX) :])
    return config_file


def _parent_path(parent: str, child: str, configs_dir: str) -> str:
    if os.path.isabs(parent):
        return parent
    beside = os.path.join(os.path.dirname(child), parent)
    return beside if os.path.isfile(beside) else os.path.join(configs_dir, parent)
