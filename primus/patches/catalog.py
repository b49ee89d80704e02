"""The modules that declare Primus's patches. Importing them registers the patches; they must stay
light (no upstream import at module level: upstream is imported inside ``install``).

Other distributions add declaring modules with an entry point in the group ``primus.patches``
(``NAME = package.module``), loaded after Primus's own, before the PRIMUS_EXTRA_PATCH_MODULES ones."""

import importlib
import os
from importlib.metadata import EntryPoint

from primus.patches.registry import REGISTRY
from primus.patches.upstream import Upstream
from primus.plugins import PluginError, describe, load_plugin, plugin_entry_points

DECLARING_MODULES: tuple[str, ...] = (
    "primus.backends.megatron.patches.cpu_patches",
    "primus.backends.megatron.patches.arguments_patches",
    "primus.backends.megatron.patches.global_vars_patches",
    "primus.backends.megatron.patches.training_log_patches",
    "primus.backends.megatron.patches.secret_arguments_patches",
    "primus.backends.torchtitan.patches.cpu_patches",
    "primus.backends.torchtitan.patches.config_manager_patches",
    "primus.backends.torchtitan.patches.metrics_processor_patches",
    "primus.backends.maxtext.patches.pyconfig_patches",
    "primus.backends.maxtext.patches.metric_logger_patches",
)

# Test and extension hook: more declaring modules, comma-separated, importable from sys.path.
EXTRA_MODULES_ENV = "PRIMUS_EXTRA_PATCH_MODULES"
PATCH_GROUP = "primus.patches"


def declaring_modules() -> tuple[str, ...]:
    """Every declaring module: Primus's own, the plugins', then PRIMUS_EXTRA_PATCH_MODULES."""
    return DECLARING_MODULES + tuple(ep.module for ep in plugin_entry_points(PATCH_GROUP)) + _extra_modules()


def _extra_modules() -> tuple[str, ...]:
    extra = os.environ.get(EXTRA_MODULES_ENV, "")
    return tuple(name.strip() for name in extra.split(",") if name.strip())


def load_all() -> None:
    """Import every declaring module (a second call is a no-op); ValueError (PluginError for a plugin's) naming
    the one that cannot be imported."""
    for name in DECLARING_MODULES:
        importlib.import_module(name)
    for ep in plugin_entry_points(PATCH_GROUP):
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
