"""One schema per backend, built on first use and cached."""

from __future__ import annotations

import functools

from primus.config.schema import Schema
from primus.config.schemas import maxtext, megatron, megatron_bridge, torchtitan

_BUILDERS = {
    "megatron": megatron.schema,
    "torchtitan": torchtitan.schema,
    "maxtext": maxtext.schema,
    "megatron_bridge": megatron_bridge.schema,
}
FRAMEWORKS = tuple(_BUILDERS)


@functools.cache
def schema_for(framework: str) -> Schema:
    return _BUILDERS[framework]()


@functools.cache
def upstream_parameter_names() -> frozenset[str]:
    """Key names of upstream parameters in any backend. Upstream names its tokenizer tokens and MoE
    dispatchers ``*_token*``; those are settings, not credentials."""
    return frozenset(
        name.rsplit(".", 1)[-1]
        for framework in FRAMEWORKS
        for name, param in schema_for(framework).params.items()
        if not param.primus
    )
