"""The modules that declare Primus's patches. Importing them registers the patches; they must stay
light (no upstream import at module level: upstream is imported inside ``install``)."""

import importlib
import os

from primus.patches.registry import REGISTRY
from primus.patches.upstream import Upstream

DECLARING_MODULES: tuple[str, ...] = (
    "primus.backends.megatron.patches.cpu_patches",
    "primus.backends.megatron.patches.args",
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


def declaring_modules() -> tuple[str, ...]:
    extra = os.environ.get(EXTRA_MODULES_ENV, "")
    return DECLARING_MODULES + tuple(name.strip() for name in extra.split(",") if name.strip())


def load_all() -> None:
    for name in declaring_modules():
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            raise ValueError(f"patch declaring module {name!r} (from DECLARING_MODULES or {EXTRA_MODULES_ENV}="
                             f"{os.environ.get(EXTRA_MODULES_ENV, '')!r}) is not importable; put it on "
                             f"PYTHONPATH or remove it") from e


def upstreams() -> tuple[Upstream, ...]:
    """The upstreams the declared patches target, each once, in declaration order."""
    load_all()
    return tuple(dict.fromkeys(p.upstream for p in REGISTRY.patches() if p.upstream is not None))
