"""The environment allow-list: which variables a Slurm job or a container receives, by name.

Layers, later wins: the packaged ``primus/configs/launch/passthrough.yaml``, the user's file
($PRIMUS_PASSTHROUGH_FILE, else ``$XDG_CONFIG_HOME/primus/passthrough.yaml`` or
``~/.config/primus/passthrough.yaml``), the experiment's ``launch.passthrough`` block. A name listed by a
later layer undoes an earlier exclusion. Only names are kept here, never values."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from primus.config import ConfigError, yaml12
from primus.config.paths import CONFIGS_DIR
from primus.config.schemas.launch import PASSTHROUGH_SCHEMA

DEFAULT_FILE = CONFIGS_DIR / "launch" / "passthrough.yaml"
USER_FILE_ENV = "PRIMUS_PASSTHROUGH_FILE"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Passthrough:
    names: frozenset[str]
    prefixes: tuple[str, ...]
    excluded: frozenset[str]
    host: frozenset[str]

    def allows(self, name: str) -> bool:
        if name in self.names:
            return True
        return name not in self.excluded and any(name.startswith(p) for p in self.prefixes)

    def select(self, environ: Mapping[str, str], *, host: bool = False, skip: Iterable[str] = ()) -> list[str]:
        """The names set in ``environ`` that the job receives, sorted; ``host`` adds the runtime names."""
        skip = set(skip)
        return sorted(
            name
            for name in environ
            if name not in skip and (self.allows(name) or (host and name in self.host and name not in self.excluded))
        )


def user_file(environ: Mapping[str, str]) -> Path | None:
    """The user's layer: $PRIMUS_PASSTHROUGH_FILE (which must exist), else the XDG config file if present."""
    if environ.get(USER_FILE_ENV):
        return Path(environ[USER_FILE_ENV]).expanduser()
    config_home = Path(environ.get("XDG_CONFIG_HOME") or Path(environ.get("HOME", "~")) / ".config").expanduser()
    path = config_home / "primus" / "passthrough.yaml"
    return path if path.is_file() else None


def load_passthrough(experiment_layer: Mapping[str, Any], environ: Mapping[str, str]) -> Passthrough:
    """The merged allow-list; raises ConfigError naming the file and key of every problem."""
    problems: list[str] = []
    layers = [_read_layer(DEFAULT_FILE, problems)]
    path = user_file(environ)
    if path is not None:
        layers.append(_read_layer(path, problems))
    layers.append(_checked(experiment_layer, "launch.passthrough", problems))
    if problems:
        raise ConfigError(problems)

    names: set[str] = set()
    prefixes: list[str] = []
    excluded: set[str] = set()
    host: set[str] = set()
    for layer in layers:
        added = set(layer.get("names", ())) | set(layer.get("host", ()))
        excluded -= added
        names |= set(layer.get("names", ()))
        host |= set(layer.get("host", ()))
        prefixes += [p for p in layer.get("prefixes", ()) if p not in prefixes]
        dropped = set(layer.get("exclude", ()))
        excluded |= dropped
        names -= dropped
        host -= dropped
        prefixes = [p for p in prefixes if p not in dropped]
    return Passthrough(frozenset(names), tuple(prefixes), frozenset(excluded), frozenset(host))


def _read_layer(path: Path, problems: list[str]) -> Mapping[str, Any]:
    try:
        tree = yaml12.load_file(path)
    except FileNotFoundError:
        problems.append(f"{path}: no such passthrough file; create it or unset {USER_FILE_ENV}")
        return {}
    except (OSError, yaml.YAMLError) as e:
        problems.append(f"{path}: cannot read the passthrough file: {' '.join(str(e).split())}")
        return {}
    if not isinstance(tree, Mapping):
        problems.append(f"{path}: must be a mapping with names, prefixes, exclude and host lists")
        return {}
    typed, found = PASSTHROUGH_SCHEMA.validate(tree, str(path))
    problems += found
    return _checked(typed, str(path), problems) if not found else {}


def _checked(layer: Mapping[str, Any], where: str, problems: list[str]) -> Mapping[str, Any]:
    """``layer`` when every entry is a variable name. A ``NAME=value`` entry is refused without
    echoing the value: values come from the environment, never from a file."""
    bad = [(key, entry) for key, entries in layer.items() for entry in entries if not _NAME.match(entry)]
    for key, entry in bad:
        shown = entry.split("=", 1)[0] + ("=..." if "=" in entry else "")
        problems.append(
            f"{where}: {key}: {shown!r} is not an environment variable name; list names only "
            f"(the value is read from the launching environment)"
        )
    return {} if bad else layer
