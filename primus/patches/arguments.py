"""Upstream's arguments by name: a wrapper's ``(args, kwargs)`` read and replaced through the wrapped
function's signature, bound when the patch installs. A renamed or removed argument then fails the install
(the registry names the patch) instead of reading a wrong value in the training loop; each read is one
dict lookup and one index (``training_log`` is wrapped and called every step). ``same_parameters`` checks, at
install, that a function of ours takes upstream's arguments exactly as upstream does, so a wrapper can pass them
on as they came: bound by Python itself, the cheapest way for a call made at every step."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_REQUIRED = inspect.Parameter.empty


class Arguments:
    """The named arguments of ``function`` as a wrapt wrapper receives them. ``method``: ``function`` is
    a plain function on a class, wrapped as ``"Class.method"``, whose ``self`` wrapt passes as ``instance``."""

    __slots__ = ("_where", "_slots")

    def __init__(self, function: Callable, *names: str, method: bool = False):
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())[1 if method else 0 :]
        by_name = {p.name: (i, p) for i, p in enumerate(parameters)}
        self._where = f"{getattr(function, '__qualname__', function)}{signature}"
        missing = [name for name in names if name not in by_name]
        if missing:
            raise TypeError(
                f"upstream's {self._where} has no argument {', '.join(map(repr, missing))}: the patch "
                f"was written for a release that had it; update the patch for this one"
            )
        self._slots = {
            name: (i if p.kind in _POSITIONAL else len(parameters), p.default)
            for name, (i, p) in ((n, by_name[n]) for n in names)
        }

    def __call__(self, name: str, args: tuple, kwargs: dict) -> Any:
        """The value passed for ``name``, else its default."""
        index, default = self._slots[name]
        if len(args) > index:
            return args[index]
        value = kwargs.get(name, default)
        if value is _REQUIRED:
            raise TypeError(f"{self._where} called without {name!r}")
        return value

    def replace(self, name: str, value: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """``(args, kwargs)`` with ``value`` passed for ``name``, where it was passed (by keyword if it was not)."""
        index, _ = self._slots[name]
        if len(args) > index:
            return (*args[:index], value, *args[index + 1 :]), kwargs
        return args, {**kwargs, name: value}


def same_parameters(upstream: Callable, ours: Callable, *, method: bool = False) -> None:
    """Refuse (at install) unless ``ours`` takes ``upstream``'s arguments as upstream does: the same names, kinds
    and defaults, in order. ``method``: both are plain functions on classes, their ``self`` left out."""

    def parameters(function: Callable) -> list[tuple[str, Any, Any]]:
        listed = list(inspect.signature(function).parameters.values())[1 if method else 0 :]
        return [(p.name, p.kind, p.default) for p in listed]

    if parameters(upstream) != parameters(ours):
        raise TypeError(
            f"upstream's {upstream.__qualname__}{inspect.signature(upstream)} does not take the arguments "
            f"{ours.__qualname__}{inspect.signature(ours)} is written for: the patch was written for a release "
            f"that had them; update the patch for this one"
        )
