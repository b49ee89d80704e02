"""The plugins installed here (entry points in the groups primus.sinks and primus.patches), each loaded as a
job would load it, and the trackers PRIMUS_SINKS turns on: what `primus doctor` prints about them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from importlib.metadata import EntryPoint

from primus.patches.catalog import PATCH_GROUP, load_patch_plugin, plugin_patch_entry_points
from primus.plugins import plugin_entry_points
from primus.tracking.sinks.plugins import SINK_GROUP, SINKS_ENV, requested_sinks, sink_classes


@dataclass(frozen=True)
class PluginRow:
    group: str
    name: str
    value: str
    distribution: str | None
    version: str | None
    problem: str  # empty: it loads


def plugin_rows() -> list[PluginRow]:
    # Each group's plugins (Primus's own patch modules are not plugins) and how a job loads one.
    checks: dict[str, tuple[list[EntryPoint], Callable[[EntryPoint], object]]] = {
        SINK_GROUP: (plugin_entry_points(SINK_GROUP), lambda ep: sink_classes([ep.name])),
        PATCH_GROUP: (plugin_patch_entry_points(), load_patch_plugin),
    }
    rows = []
    for group, (found, check) in checks.items():
        for ep in found:
            dist = ep.dist
            rows.append(
                PluginRow(
                    group,
                    ep.name,
                    ep.value,
                    dist.name if dist else None,
                    dist.version if dist else None,
                    _problem(partial(check, ep)),
                )
            )
    return rows


def requested_sinks_problem(environ: Mapping[str, str] = os.environ) -> str:
    """Why the trackers PRIMUS_SINKS names cannot all be used here; empty when they can."""
    return _problem(lambda: sink_classes(requested_sinks(environ)))


def format_plugin_lines(rows: list[PluginRow], environ: Mapping[str, str] = os.environ) -> list[str]:
    lines = [
        f"  {r.group:<16}{r.name} = {r.value} ({r.distribution} {r.version}): {r.problem or 'loads'}" for r in rows
    ] or ["  none installed"]
    wanted = requested_sinks(environ)
    if wanted:
        lines.append(f"  {SINKS_ENV}={','.join(wanted)}: {requested_sinks_problem(environ) or 'each one loads'}")
    return lines


def _problem(load: Callable[[], object]) -> str:
    try:
        load()
    except ValueError as e:
        return str(e)
    return ""
