"""Each backend as one object, found through the entry-point group ``primus.backends`` (``NAME =
package.module:OBJECT``): Primus's own four are registered there like another distribution's, so nothing outside
``primus/backends`` names one. The patch catalogue, the experiment schema, the launcher, the generated docs and
the report ask a ``Backend`` what they need: its upstream, its patch modules in hook order, its entry module, its
schema, which of Primus's option groups it has. A backend's declaring module stays light: it names its modules
and they are imported when asked for. Here, beside the upstream declarations, so that every layer can read it."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import primus
from primus.plugins import PluginError, describe, load_plugin, plugin_entry_points
from primus.upstreams.release import Upstream

BACKEND_GROUP = "primus.backends"

# The groups of Primus's options a backend may have (``Option.group``); an option of no group every backend has.
DISABLE_SWITCHES = "disable_switches"  # the trackers turned off by ``disable_*`` (Megatron's spelling)
ENABLE_SWITCHES = "enable_switches"  # the trackers turned on by ``enable_*`` (TorchTitan's and MaxText's)
LOG_FLAGS = "log_flags"  # what its own training log writes, and how it averages it (Megatron's ``log_*``)
RUN_DIR_ARGUMENT = "run_dir_argument"  # the run directory as an argument of its command line
ACROSS_RANKS = "across_ranks"  # memory and utilisation gathered from every rank
STRAGGLERS = "stragglers"  # the slowest rank named at each log step
LOG_FILES = "log_files"  # every rank's console captured into the run directory
TRACES = "traces"  # torch profiler traces (and TraceLens' report) uploaded
ONE_LOGGER_OPTIONS = "one_logger_options"  # the spec's One-Logger options, where upstream has none of its own
# What a backend's upstream logs, by kind (``Backend.metric_names``): the report's panels, the health watch and the
# goodput breakdown read a run's figures by these, after Primus's own names
LOSS, LEARNING_RATE, TOKENS_PER_SEC = "loss", "learning rate", "tokens/s"
TFLOPS, MEMORY, MFU = "TFLOP/s", "memory", "MFU"
ITERATION_S = "seconds per iteration"
DATA_WAIT_S = "data wait, seconds per iteration"  # an iteration's wait for its batches
DATA_WAIT_SHARE = "data wait, share of an iteration"  # the same as a fraction of the iteration's time
OPTION_GROUPS = (
    DISABLE_SWITCHES,
    ENABLE_SWITCHES,
    LOG_FLAGS,
    RUN_DIR_ARGUMENT,
    ACROSS_RANKS,
    STRAGGLERS,
    LOG_FILES,
    TRACES,
    ONE_LOGGER_OPTIONS,
)


@dataclass(frozen=True)
class Environment:
    """A backend that runs on a Python environment of its own (MaxText's JAX): what tells an interpreter has it,
    the variable naming its Python, the environment's folder beside this one and the script that makes it."""

    packages: tuple[str, ...]
    variable: str
    folder: str
    setup: str


@dataclass(frozen=True)
class Backend:
    name: str  # the experiment's ``framework:`` and the entry point's name
    title: str  # what its users call it
    position: int  # where it is listed (choices, docs, ``primus patches``): by position, then name
    upstream: Upstream
    patch_modules: tuple[str, ...]  # the modules declaring its patches; two on one function wrap it in this order
    entry_module: str  # ``python -m`` it: upstream's trainer with the patches active (what ``primus train`` runs)
    schema_builder: str  # ``module:function`` building its experiment schema
    upstream_table_finder: str  # ``module:function``: the table of upstream's keys for the release installed here
    session_class: str = ""  # ``module:class``: the one object its patches hold for a run (plan, run, writer)
    # ``module:class``: what `primus train` asks of a module before launching it (``primus.config.launch_rules``)
    launch_rules_class: str = "primus.config.launch_rules:LaunchRules"
    option_groups: frozenset[str] = frozenset()
    option_section: str = ""  # where its experiment keeps Primus's options (TorchTitan's ``metrics.``)
    # option name -> the key of its own config standing for it (Bridge's ``logger.mlflow_tags``)
    option_keys: Mapping[str, str] = field(default_factory=dict)
    option_keys_note: str = ""  # docs/options.md: what else of its own config tracking reads
    upstream_key_kind: str = "upstream key"  # what its docs call a key of upstream's config
    preset_note: str = ""  # docs/options.md: where the preset's value of an upstream key gives way to the user's
    environment: Environment | None = None
    # kind -> the names its upstream logs it by, the first present wins; one ending in "/" is a prefix
    metric_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # an upstream name in another unit than Primus's (bytes, percent) -> the factor that converts it
    metric_scale: Mapping[str, float] = field(default_factory=dict)
    # its first log step in a process only starts its clock (no rate yet): Megatron's
    first_log_starts_clock: bool = False

    def __post_init__(self):
        unknown = set(self.option_groups) - set(OPTION_GROUPS)
        if unknown:
            raise ValueError(f"backend {self.name!r}: option groups {sorted(unknown)} are not among {OPTION_GROUPS}")

    def has(self, group: str | None) -> bool:
        return group is None or group in self.option_groups

    def schema(self) -> Any:  # a primus.config.schema.Schema (config sits above this layer)
        return _call(self.schema_builder)

    def upstream_table(self) -> Path:
        return _call(self.upstream_table_finder)

    def launch_rules(self) -> Any:  # a primus.config.launch_rules.LaunchRules (config sits above this layer)
        module, _, name = self.launch_rules_class.partition(":")
        return getattr(importlib.import_module(module), name)(self.option_section)


def _call(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)()


@functools.cache
def backends() -> tuple[Backend, ...]:
    """Every installed backend: Primus's own by name, then other distributions' by name. ValueError naming the
    fix when Primus's own cannot be found (a source tree on PYTHONPATH is not installed); PluginError naming the
    distribution of one that cannot be used."""
    points = plugin_entry_points(BACKEND_GROUP)
    own = [ep for ep in points if ep.dist is not None and ep.dist.name == primus.DISTRIBUTION]
    if not own:
        raise ValueError(
            f"primus's own backends cannot be found: they are entry points (group {BACKEND_GROUP}) of the "
            f"distribution {primus.DISTRIBUTION}, which {_installed()}. Install it (`pip install -e <source tree>` "
            f"for a checkout) rather than putting it on PYTHONPATH; reinstall it when it was installed before its "
            f"backends were entry points"
        )
    found: dict[str, Backend] = {}
    for ep in points:
        backend = load_plugin(ep)
        if not isinstance(backend, Backend) or backend.name != ep.name:
            raise PluginError(f"{describe(ep)} must name a primus.upstreams.backends.Backend whose name is {ep.name!r}")
        if ep.name in found:
            raise PluginError(f"{describe(ep)}: a backend named {ep.name!r} is installed already; uninstall one")
        found[ep.name] = backend
    return tuple(sorted(found.values(), key=lambda b: (b.position, b.name)))


def _installed() -> str:
    try:
        return f"{importlib.metadata.version(primus.DISTRIBUTION)} is installed without them"
    except importlib.metadata.PackageNotFoundError:
        return "is not installed"


def backend_named(name: str) -> Backend:
    for backend in backends():
        if backend.name == name:
            return backend
    raise ValueError(f"no backend is named {name!r}: installed are {', '.join(b.name for b in backends())}")


def names() -> tuple[str, ...]:
    return tuple(b.name for b in backends())


@functools.cache
def metric_names(kind: str) -> tuple[str, ...]:
    """Every backend's names for ``kind``, each once, in the backends' order."""
    return tuple(dict.fromkeys(n for b in backends() for n in b.metric_names.get(kind, ())))


@functools.cache
def metric_scale(name: str) -> float:
    """The factor that converts a backend's values of ``name`` into its kind's unit (bytes to GiB, percent to a
    fraction)."""
    return next((b.metric_scale[name] for b in backends() if name in b.metric_scale), 1.0)
