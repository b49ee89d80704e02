"""Trackers that other distributions add: entry points in the group ``primus.sinks``, turned on by name with
``PRIMUS_SINKS=name[,name...]`` in the job's environment (the launchers pass every PRIMUS_ variable on).

A plugin's distribution declares ``[project.entry-points."primus.sinks"] aim = "primus_aim:AimSink"``.
The class subclasses ``primus.tracking.sinks.sink.Sink``, its ``name`` is the entry point's name, and it is built
with one argument, a ``SinkContext``. It reads its own settings (server, API key, project) from the
environment, as W&B and MLflow do, and imports its tracker's client in ``open``, not at import time.

It receives the journal's records exactly as the built-in trackers do: one worker feeds it from its saved
cursor, retries while it fails, and what a crash or the exit deadline left undelivered is replayed by the
next launch of the run and by ``primus tracking sync RUN_DIR``. With delivery "process" (the default) it
runs in the delivery process, off the training process's GIL, like TensorBoard, W&B and MLflow."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from primus.plugins import PluginError, describe, load_plugin, plugin_entry_points
from primus.tracking.journal.records import SinkName
from primus.tracking.sinks.sink import Sink

SINKS_ENV = "PRIMUS_SINKS"
SINK_GROUP = "primus.sinks"
RESERVED = (*SinkName, "run")  # a plugin's name keys its cursor file and its section of run.json
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def requested_sinks(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The plugin sinks PRIMUS_SINKS names, in order, each once."""
    return tuple(dict.fromkeys(n.strip() for n in environ.get(SINKS_ENV, "").split(",") if n.strip()))


def sink_classes(names: Iterable[str]) -> dict[str, type[Sink]]:
    """The class of each named plugin sink; PluginError naming every one that cannot be used, and the fix."""
    names = list(names)
    if not names:
        return {}
    installed: dict[str, list] = {}
    for ep in plugin_entry_points(SINK_GROUP):
        installed.setdefault(ep.name, []).append(ep)
    classes: dict[str, type[Sink]] = {}
    problems: list[str] = []
    for name in names:
        try:
            classes[name] = _sink_class(name, installed.get(name, []), sorted(installed))
        except PluginError as e:
            problems.append(str(e))
    if problems:
        raise PluginError("; ".join(problems))
    return classes


def _sink_class(name: str, found: list, installed: list[str]) -> type[Sink]:
    where = f"{SINKS_ENV} names {name!r}"
    if name in RESERVED or not _NAME.fullmatch(name):
        raise PluginError(
            f"{where}, which is {'a built-in sink' if name in RESERVED else 'not a sink name'}: list "
            f"plugin sinks only (installed: {installed or 'none'}); built-in trackers are turned on "
            f"by their own settings"
        )
    if not found:
        raise PluginError(
            f"{where} but no installed distribution has an entry point {name!r} in group {SINK_GROUP} "
            f"(installed: {installed or 'none'}): install the plugin into this environment (the "
            f"image's, for a container), or remove {name!r} from {SINKS_ENV}"
        )
    if len(found) > 1:
        raise PluginError(
            f"{where} and {len(found)} entry points claim it: "
            f"{'; '.join(describe(ep) for ep in found)}: uninstall all but one"
        )
    ep = found[0]
    cls = load_plugin(ep)
    if not (isinstance(cls, type) and issubclass(cls, Sink)):
        raise PluginError(
            f"{describe(ep)} names {cls!r}, not a subclass of primus.tracking.sinks.sink.Sink: point the "
            f"entry point at the sink class"
        )
    if getattr(cls, "name", None) != name:
        raise PluginError(
            f"{describe(ep)}: {cls.__name__}.name is {getattr(cls, 'name', None)!r}; it must be "
            f"the entry point's name, {name!r}"
        )
    return cls
