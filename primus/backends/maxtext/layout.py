"""MaxText's parallel layout, from its mesh settings, for the run's ``primus.parallel.*`` tags. Each mesh axis is
the product of its ``ici_<axis>_parallelism`` (within a slice) and ``dcn_<axis>_parallelism`` (across slices); an
axis set to -1 takes the devices the others leave (as MaxText's mesh does). Tensor parallel is ``tensor``,
pipeline ``pipeline``, context ``context``, expert ``expert``, data parallel ``data`` x ``fsdp`` x
``fsdp_transpose``; the world size is the number of devices."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from primus.tracking.layout import layout_tags

_DP_AXES = ("data", "fsdp", "fsdp_transpose")
_AXES = {"tp": ("tensor",), "pp": ("pipeline",), "cp": ("context",), "ep": ("expert",), "dp": _DP_AXES}


def layout_tags_of(settings: Mapping[str, Any], devices: int) -> dict[str, str]:
    axes: dict[str, int] = {}
    for key, value in settings.items():
        if key.endswith("_parallelism") and key.startswith(("ici_", "dcn_")) and isinstance(value, int):
            axis = key[4 : -len("_parallelism")]
            axes[axis] = axes.get(axis, 1) * value
    known = math.prod(v for v in axes.values() if v > 0)
    resolved = {axis: v if v > 0 else max(devices // known, 1) for axis, v in axes.items()}
    degrees = {name: math.prod(resolved.get(a, 1) for a in names) for name, names in _AXES.items()}
    return layout_tags(devices, **degrees)
