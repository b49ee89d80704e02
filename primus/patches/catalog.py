"""The modules that declare patches, in load order (two patches on one upstream function wrap it in that order,
the later one outermost): 1. each backend's (``primus.upstreams.backends``: Primus's own, then other distributions'),
in the order its ``Backend`` lists them; 2. the modules of other distributions' ``primus.patches`` entry points,
by name; 3. PRIMUS_EXTRA_PATCH_MODULES (tests, extensions), as given. Importing a declaring module registers its
patches; it must stay light (no upstream import at module level: upstream is imported inside ``install``)."""

import importlib
import os
from importlib.metadata import EntryPoint

import primus
from primus.patches.registry import REGISTRY
from primus.plugins import PluginError, describe, load_plugin, plugin_entry_points
from primus.upstreams.backends import backends
from primus.upstreams.release import Upstream

PATCH_GROUP = "primus.patches"
# Test and extension hook: more declaring modules, comma-separated, importable from sys.path.
EXTRA_MODULES_ENV = "PRIMUS_EXTRA_PATCH_MODULES"


def backend_modules() -> tuple[str, ...]:
    """Every backend's declaring modules, backend by backend; ValueError naming the fix when Primus's own backends
    cannot be found (``primus.upstreams.backends``)."""
    return tuple(module for backend in backends() for module in backend.patch_modules)


def plugin_patch_entry_points() -> list[EntryPoint]:
    """Other distributions' declaring modules, by entry-point name."""
    return [ep for ep in plugin_entry_points(PATCH_GROUP) if ep.dist is None or ep.dist.name != primus.DISTRIBUTION]


def declaring_modules() -> tuple[str, ...]:
    """Every declaring module, in load order: the backends', the plugins', then PRIMUS_EXTRA_PATCH_MODULES."""
    return backend_modules() + tuple(ep.module for ep in plugin_patch_entry_points()) + _extra_modules()


def _extra_modules() -> tuple[str, ...]:
    extra = os.environ.get(EXTRA_MODULES_ENV, "")
    return tuple(name.strip() for name in extra.split(",") if name.strip())


def load_all() -> None:
    """Import every declaring module (a second call is a no-op); ValueError (PluginError for a plugin's) naming
    the one that cannot be imported."""
    for module in backend_modules():
        importlib.import_module(module)
    for ep in plugin_patch_entry_points():
        load_patch_plugin(ep)
    for name in _extra_modules():
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            raise ValueError(
                f"patch declaring module {name!r} (from {EXTRA_MODULES_ENV}="
                f"{os.environ.get(EXTRA_MODULES_ENV, '')!r}) is not importable; put it on "
                f"PYTHONPATH or remove it"
            ) from e


def load_patch_plugin(ep: EntryPoint) -> None:
    """Import the module a ``primus.patches`` entry point names; PluginError naming it and its distribution."""
    if ep.attr is not None:
        raise PluginError(
            f"{describe(ep)} names an object; a patch plugin's entry point names the module that "
            f"declares its patches: `{ep.name} = {ep.module}`"
        )
    load_plugin(ep)


def upstreams() -> tuple[Upstream, ...]:
    """The upstreams the declared patches target, each once, in declaration order."""
    load_all()
    return tuple(dict.fromkeys(p.upstream for p in REGISTRY.patches() if p.upstream is not None))
