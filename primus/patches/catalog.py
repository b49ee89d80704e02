"""The modules that declare Primus's patches. Importing them registers the patches; they must stay
light (no upstream import at module level: upstream is imported inside ``install``)."""

import importlib

DECLARING_MODULES: tuple[str, ...] = ()


def load_all() -> None:
    for name in DECLARING_MODULES:
        importlib.import_module(name)
