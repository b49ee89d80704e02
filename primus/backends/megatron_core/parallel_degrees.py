"""Megatron's parallel layout, from its own argument names (``tensor_model_parallel_size``...), for the run's
``primus.parallel.*`` tags. Megatron-Bridge's model config uses the same names. The data-parallel degree is
Megatron's own formula when upstream has not set it: world size over TP x PP x CP."""

from __future__ import annotations

from typing import Any


def parallel_degrees(config: Any, world_size: int) -> dict[str, int | None]:
    tp, pp, cp = (
        int(getattr(config, name, None) or 1)
        for name in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
    )
    dp = getattr(config, "data_parallel_size", None) or world_size // (tp * pp * cp)
    return {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": getattr(config, "expert_model_parallel_size", None)}
