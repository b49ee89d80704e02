"""What other installed distributions add to Primus, through entry points (``[project.entry-points]`` in their
pyproject, ``entry_points.txt`` in their dist-info):

* ``primus.sinks``: ``NAME = package.module:SinkClass``, a tracker (``primus.tracking.sinks.plugins``), on when
  PRIMUS_SINKS names it;
* ``primus.patches``: ``NAME = package.module``, a module that declares patches (``primus.patches.catalog``),
  loaded after the backends' own;
* ``primus.backends``: ``NAME = package.module:BACKEND``, a whole backend (``primus.upstreams.backends``), Primus's
  own four among them.

A plugin that cannot be loaded is a ``PluginError`` naming the distribution and the entry point, raised
before training starts."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any


class PluginError(ValueError):
    """An installed plugin cannot be used; the message names its distribution, its entry point and the fix."""


def plugin_entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points of every installed distribution, by name."""
    return sorted(entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def describe(ep: EntryPoint) -> str:
    dist = ep.dist
    source = f"distribution {dist.name} {dist.version}" if dist is not None else "an unnamed distribution"
    return f"entry point `{ep.name} = {ep.value}` (group {ep.group}) of {source}"


def load_plugin(ep: EntryPoint) -> Any:
    """What the entry point names, imported; PluginError when importing it fails."""
    try:
        return ep.load()
    except Exception as e:  # noqa: BLE001 - whatever a third-party import raises, said with its source
        raise PluginError(
            f"{describe(ep)} cannot be loaded ({type(e).__name__}: {e}): fix or reinstall that "
            f"distribution, or uninstall it"
        ) from e
