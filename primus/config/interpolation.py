"""``${VAR}`` and ``${VAR:default}`` in string values, from the environment.

An unset ``${VAR}`` without a default is an error naming the variable and the key. A reference that
would copy a credential into the config (a secret-named variable, a value shaped like a secret, or
any value under a secret-named key) is refused: the config is dumped and uploaded, the environment
is not. Substituted text is ``Unparsed``: the schema decides whether ``${ITERS:10}`` is 10 or "10".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from primus.config.errors import ALREADY_REPORTED
from primus.config.secrets import is_secret, refusal
from primus.config.tree import map_strings
from primus.config.yaml12 import Unparsed
from primus.redaction import is_secret_key

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def interpolate(tree: Any, source: str, environ: Mapping[str, str]) -> tuple[Any, list[str]]:
    """A copy of ``tree`` with every reference substituted, and the problems found."""
    problems: list[str] = []

    def substitute(path: str, key: str, text: str) -> Any:
        if "${" not in text:
            return text
        failed = False

        def one(match: re.Match[str]) -> str:
            nonlocal failed
            var, default = match.group(1), match.group(2)
            value = environ.get(var, default)
            if is_secret_key(var):
                problems.append(refusal(f"{source}: {path}", var, "", f"referenced as ${{{var}}}"))
            elif value is None:
                problems.append(
                    f"{source}: {path}: ${{{var}}} is not set; export {var} or give a default: ${{{var}:value}}"
                )
            elif is_secret(key, value):
                problems.append(refusal(f"{source}: {path}", key, value, f"interpolated from ${{{var}}}"))
            else:
                return value
            failed = True
            return ""

        result = _REFERENCE.sub(one, text)
        return ALREADY_REPORTED if failed else Unparsed(result)

    return map_strings(tree, substitute), problems
