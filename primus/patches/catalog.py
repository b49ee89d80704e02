"""The modules that declare patches, found through entry points of the group ``primus.patches`` (``NAME =
package.module``): Primus's own backends register theirs there like any other distribution, so this layer names
no backend. Importing a declaring module registers its patches; it must stay light (no upstream import at module
level: upstream is imported inside ``install``).

They load, and so hook their patches, in this order (two patches on one upstream function wrap it in that order,
the later one outermost):
1. Primus's own (its ``setup.cfg``, ``[options.entry_points]``), by entry-point name, whose number in front fixes
   the order: Megatron, TorchTitan, MaxText, Megatron-Bridge, each with its CPU platform first
   (``11-megatron.arguments`` before ``14-megatron.secret_arguments``: the secret-name check wraps ``validate_args``
   outside the planning);
2. other distributions' (plugins), by entry-point name; 3. PRIMUS_EXTRA_PATCH_MODULES (tests, extensions), as given.

Primus's own come from its installed metadata. A source tree put on PYTHONPATH without being installed has none:
that is an error naming the fix, never a run with no patch."""

import importlib
import importlib.metadata
import os
from importlib.metadata import Distribution, EntryPoint
from pathlib import Path

import primus
from primus.patches.registry import REGISTRY
from primus.plugins import PluginError, describe, load_plugin, plugin_entry_points
from primus.upstreams.release import Upstream

PATCH_GROUP = "primus.patches"
# Test and extension hook: more declaring modules, comma-separated, importable from sys.path.
EXTRA_MODULES_ENV = "PRIMUS_EXTRA_PATCH_MODULES"


def own_entry_points() -> list[EntryPoint]:
    """Primus's own declaring modules, by entry-point name; ValueError when the metadata that
    lists them is not there (primus not installed, or installed before they were entry points)."""
    try:
        dist: Distribution | None = importlib.metadata.distribution(primus.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    listed = sorted(dist.entry_points.select(group=PATCH_GROUP), key=lambda ep: ep.name) if dist is not None else []
    if not listed:
        source = Path(primus.__file__).resolve().parents[1]
        found = "is not installed" if dist is None else f"{dist.version} is installed without them"
        raise ValueError(
            f"primus's own patches cannot be found: they are entry points (group {PATCH_GROUP}) of the "
            f"distribution {primus.DISTRIBUTION}, which {found} (primus imported from {source}). Install it, "
            f"`pip install -e {source}` for a source tree, rather than putting it on PYTHONPATH; reinstall it when "
            f"it was installed before its patches were entry points"
        )
    return listed


def plugin_patch_entry_points() -> list[EntryPoint]:
    """Other distributions' declaring modules, by entry-point name."""
    return [ep for ep in plugin_entry_points(PATCH_GROUP) if ep.dist is None or ep.dist.name != primus.DISTRIBUTION]


def declaring_modules() -> tuple[str, ...]:
    """Every declaring module, in load order: Primus's own, the plugins', then PRIMUS_EXTRA_PATCH_MODULES."""
    return tuple(ep.module for ep in own_entry_points() + plugin_patch_entry_points()) + _extra_modules()


def _extra_modules() -> tuple[str, ...]:
    extra = os.environ.get(EXTRA_MODULES_ENV, "")
    return tuple(name.strip() for name in extra.split(",") if name.strip())


def load_all() -> None:
    """Import every declaring module (a second call is a no-op); ValueError (PluginError for a plugin's) naming
    the one that cannot be imported."""
    for ep in own_entry_points():
        importlib.import_module(ep.module)
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
