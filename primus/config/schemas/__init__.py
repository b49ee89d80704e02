"""Each backend's experiment schema (its ``Backend.schema``), built on first use and cached."""

from __future__ import annotations

import functools

from primus.config.schema import Schema
from primus.upstreams import backends

FRAMEWORKS = backends.names()


@functools.cache
def schema_for(framework: str) -> Schema:
    return backends.backend_named(framework).schema()


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
