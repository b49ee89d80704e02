"""TorchTitan's parallel layout, from upstream's ``ParallelDims`` (its degrees once ``-1`` is resolved), for the
run's ``primus.parallel.*`` tags: data parallel is the replicate x shard degrees (HSDP's two axes)."""

from __future__ import annotations

from typing import Any

from primus.tracking.tags.parallel import layout_tags


def layout_tags_of(parallel_dims: Any) -> dict[str, str]:
    if parallel_dims is None:
        return {}
    degree = {name: getattr(parallel_dims, name, None) for name in ("dp_replicate", "dp_shard", "tp", "pp", "cp", "ep")}
    dp = degree["dp_replicate"] * degree["dp_shard"] if degree["dp_replicate"] and degree["dp_shard"] else None
    return layout_tags(
        getattr(parallel_dims, "world_size", None),
        tp=degree["tp"],
        pp=degree["pp"],
        dp=dp,
        cp=degree["cp"],
        ep=degree["ep"],
    )
