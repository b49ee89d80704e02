"""Primus's metrics options as fields of upstream's ``metrics`` config (0.3's ``MetricsProcessor.Config``, 0.2.2's
``JobConfig.metrics``), so they are set as upstream's own are (the YAML's ``metrics:``, ``--metrics.enable-mlflow``,
a TOML ``[metrics]``) and are part of the config dict every tracker receives."""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any

from primus.config.schema import Param
from primus.config.schemas.tracking import PYTHON_TYPES, params_for

OPTIONS = params_for("torchtitan", in_section=False)
PRIMUS_FIELDS = tuple(p.name for p in OPTIONS)


def _field(param: Param) -> tuple[str, Any, Any]:
    """A dataclass field for ``param``; its help is what upstream's command line (tyro) shows for it."""
    import tyro  # torchtitan's own command-line parser, there whenever torchtitan is

    kind: Any = PYTHON_TYPES[param.type]
    if param.nullable:
        kind = kind | None
    return param.name, Annotated[kind, tyro.conf.arg(help=param.help)], dataclasses.field(default=param.default)


@functools.cache
def primus_config_class(base: type) -> type:
    if all(name in {f.name for f in dataclasses.fields(base)} for name in PRIMUS_FIELDS):
        return base
    return dataclasses.make_dataclass(
        f"Primus{base.__qualname__.replace('.', '')}",
        [_field(param) for param in OPTIONS],
        bases=(base,),
        kw_only=True,
        slots=True,
    )


@functools.cache
def primus_job_config_class(job_config_class: type) -> type:
    """``job_config_class`` (upstream's ``JobConfig`` or a merge of it with a user's custom config) with
    Primus's fields in its ``metrics`` section."""
    [metrics] = [f for f in dataclasses.fields(job_config_class) if f.name == "metrics"]
    options = primus_config_class(metrics.type)  # type: ignore[arg-type]  # a class: mypy holds type[Any] unhashable
    if options is metrics.type:
        return job_config_class
    return dataclasses.make_dataclass(
        f"Primus{job_config_class.__name__}",
        [("metrics", options, dataclasses.field(default_factory=options))],
        bases=(job_config_class,),
    )


def with_primus_options(metrics_config: Any) -> Any:
    cls = primus_config_class(type(metrics_config))  # type: ignore[arg-type]  # as above
    if type(metrics_config) is cls:
        return metrics_config
    values = {f.name: getattr(metrics_config, f.name) for f in dataclasses.fields(metrics_config) if f.init}
    return cls(**values)
