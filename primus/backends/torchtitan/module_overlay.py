"""A stand-in for a module one upstream module refers to by a global name (``torch``, ``tyro``), with some
attributes replaced: that upstream module keeps calling ``name.attr`` and gets ours where one is replaced,
the real one everywhere else. Nothing outside that upstream module changes. For a call upstream makes
inline, in the middle of a function that no method boundary splits (so there is nothing to wrap)."""

from __future__ import annotations

from typing import Any


class Overlay:
    def __init__(self, base: Any, **replaced: Any):
        self.__dict__.update(replaced)
        self._base = base

    def __getattr__(self, name: str) -> Any:  # asked only for what is not replaced
        return getattr(self._base, name)

    def __repr__(self) -> str:
        return f"<primus overlay of {self._base!r}: {', '.join(k for k in vars(self) if k != '_base')}>"
