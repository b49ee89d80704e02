"""Command-line overrides: ``a.b.c=value`` sets a path in the experiment tree (``workspace=/tmp/x``,
``modules.pre_trainer.overrides.lr=1e-4``); ``key=value`` whose key is a module parameter
(``train_iters=5``, ``metrics.log_freq=1`` for TorchTitan) sets it in that module, last of all.
Values stay ``Unparsed`` text until the schema types them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from primus.config.schemas import FRAMEWORKS, schema_for
from primus.config.secrets import is_secret, refusal
from primus.config.tree import set_dotted
from primus.config.yaml12 import Unparsed

EXPERIMENT_KEYS = ("work_group", "user_name", "exp_name", "workspace", "launch", "modules")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$")


@dataclass
class SortedOverrides:
    tree: dict[str, Any] = field(default_factory=dict)  # dotted experiment path -> value
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)  # module -> nested params
    problems: list[str] = field(default_factory=list)


def sort_overrides(overrides: Iterable[str], modules: Mapping[str, Any]) -> SortedOverrides:
    """Split ``key=value`` overrides into experiment-tree paths and per-module parameters.
    ``modules`` is the experiment's ``modules:`` mapping, to find which module owns a bare key."""
    out = SortedOverrides()
    for text in overrides:
        key, sep, value = text.partition("=")
        where = f"command line: {key}"
        if not sep or not _KEY.match(key):
            out.problems.append(f"command line: {text!r} is not key=value; write e.g. train_iters=5")
            continue
        if is_secret(key.rsplit(".", 1)[-1], value):
            out.problems.append(refusal(where, key.rsplit(".", 1)[-1], value, "given on the command line"))
            continue
        if key.split(".", 1)[0] in EXPERIMENT_KEYS:
            out.tree[key] = Unparsed(value)
            continue
        owners = [name for name, fw in _frameworks(modules).items() if schema_for(fw).knows(key)]
        if len(owners) == 1:
            set_dotted(out.modules.setdefault(owners[0], {}), key, Unparsed(value))
        elif owners:
            choices = " or ".join(f"modules.{m}.overrides.{text}" for m in owners)
            out.problems.append(f"{where}: more than one module has this parameter; write {choices}")
        else:
            out.problems.append(f"{where}: no module has this parameter{_suggestion(key, modules)}")
    return out


def _frameworks(modules: Mapping[str, Any]) -> dict[str, str]:
    """Module name -> framework, for the modules whose framework is known."""
    return {
        name: block["framework"]
        for name, block in modules.items()
        if isinstance(block, Mapping) and block.get("framework") in FRAMEWORKS
    }


def _suggestion(key: str, modules: Mapping[str, Any]) -> str:
    for fw in dict.fromkeys(_frameworks(modules).values()):
        close = schema_for(fw).closest(key)
        if close:
            return f"; did you mean {close}?"
    return f"; experiment keys are {', '.join(EXPERIMENT_KEYS)}"
