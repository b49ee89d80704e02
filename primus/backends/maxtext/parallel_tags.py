"""MaxText's parallel layout, from its mesh settings, for the run's ``primus.parallel.*`` tags. Each mesh axis is
the product of its ``ici_<axis>_parallelism`` (within a slice) and ``dcn_<axis>_parallelism`` (across slices); an
axis set to -1 takes what the others of its level leave (a slice's devices, or the slices), as MaxText's mesh
does. Tensor parallel is ``tensor``, pipeline ``pipeline``, context ``context``, expert ``expert``, data parallel
``data`` x ``fsdp`` x ``fsdp_transpose``; the world size is the number of devices."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from primus.tracking.tags.parallel import layout_tags

_DP_AXES = ("data", "fsdp", "fsdp_transpose")
_AXES = {"tp": ("tensor",), "pp": ("pipeline",), "cp": ("context",), "ep": ("expert",), "dp": _DP_AXES}


def layout_tags_of(settings: Mapping[str, Any], devices: int) -> dict[str, str]:
    slices = settings.get("num_slices")
    slices = slices if isinstance(slices, int) and slices > 0 else 1  # MaxText's config resolved it: 1 on one slice
    axes: dict[str, int] = {}
    for level, target in (("ici", max(devices // slices, 1)), ("dcn", slices)):
        for axis, degree in _level(settings, level, target).items():
            axes[axis] = axes.get(axis, 1) * degree
    degrees = {name: math.prod(axes.get(a, 1) for a in names) for name, names in _AXES.items()}
    return layout_tags(devices, **degrees)


def _level(settings: Mapping[str, Any], level: str, target: int) -> dict[str, int]:
    """One level's degrees by axis, its -1 (MaxText allows one per level) given what the others leave of
    ``target`` (the devices of a slice, or the slices)."""
    given = {
        key[len(level) + 1 : -len("_parallelism")]: value
        for key, value in settings.items()
        if key.startswith(f"{level}_") and key.endswith("_parallelism") and isinstance(value, int)
    }
    known = math.prod(v for v in given.values() if v > 0)
    return {axis: v if v > 0 else max(target // known, 1) for axis, v in given.items()}
