"""docs/options.md: every option of every backend's schema with its default, and the ``launch:`` block.

A backend's default is what a module gets from ``config: pre_trainer.yaml`` (the packaged preset and the
presets it extends); a key the preset does not set keeps upstream's default. Descriptions are the
schema's help, else the Purpose column of the spec's tables (docs/spec-logging-and-experiment-tracking.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from primus.config.files import load_with_extends
from primus.config.paths import CONFIGS_DIR, MODULE_PRESETS_DIR
from primus.config.schema import Param, Schema
from primus.config.schemas import FRAMEWORKS, schema_for, upstream_tables
from primus.config.schemas.launch import LAUNCH_SCHEMA
from primus.config.schemas.tracking import upstream_keys
from primus.config.tree import join
from primus.docs_gen.markdown import code, fill, table, yaml_text
from primus.upstreams.backends import backend_named

PRESET = "pre_trainer.yaml"
_SPEC_ROW = re.compile(r"^\|\s*(`[^|]*`)\s*\|.*\|\s*([^|]*?)\s*\|\s*$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def preset_defaults(framework: str) -> dict[str, Any]:
    """Dotted parameter name -> the typed value ``pre_trainer.yaml`` gives it, in the preset's order."""
    schema = schema_for(framework)
    tree, problems = load_with_extends(MODULE_PRESETS_DIR / framework / PRESET, environ={})
    typed, found = schema.validate(tree, f"{framework}/{PRESET}")
    if problems or found:
        raise ValueError("\n".join(problems + found))
    return dict(_flatten(typed, "", schema))


def _flatten(tree: Mapping[str, Any], prefix: str, schema: Schema) -> Iterable[tuple[str, Any]]:
    for key, value in tree.items():
        name = join(prefix, key)
        if name in schema.sections and isinstance(value, Mapping):
            yield from _flatten(value, name, schema)
        else:
            yield name, value


def spec_purposes(spec: Path) -> dict[str, str]:
    """Parameter -> its Purpose cell in the spec's tables (links reduced to their text); first one wins."""
    purposes: dict[str, str] = {}
    for line in spec.read_text(encoding="utf-8").splitlines():
        if match := _SPEC_ROW.match(line):
            for name in re.findall(r"`([^`]*)`", match.group(1)):
                purposes.setdefault(name, _LINK.sub(r"\1", match.group(2)))
    return purposes


def _rows(
    params: Iterable[Param], defaults: Mapping[str, Any], purposes: Mapping[str, str], flagged: bool
) -> list[list[str]]:
    return [
        [
            code(p.name),
            code(yaml_text(defaults.get(p.name, p.default))),
            *(["—" if p.primus else code(yaml_text(p.default))] if flagged else []),
            p.expected(),
            "Primus" if p.primus else "upstream",
            p.help or purposes.get(p.name, ""),
        ]
        for p in params
    ]


def _backend_section(framework: str, purposes: Mapping[str, str]) -> str:
    backend, schema, defaults = backend_named(framework), schema_for(framework), preset_defaults(framework)
    flagged = _flagged(schema.params.values())
    # the preset's keys in its order (the spec's sections), then the schema's others that are Primus's own
    main = [schema.params[n] for n in defaults] + [
        p
        for n, p in schema.params.items()
        if n not in defaults and (p.primus or (not flagged and p.annotation is None))
    ]
    header = [
        "Parameter",
        "Default",
        *(["Upstream default"] if flagged else []),
        "Type",
        "Owner",
        "Description",
    ]
    intro = f"Logging and tracking parameters: what `config: {PRESET}` sets, and Primus's own."
    parts = [
        f"## {backend.title} (`framework: {framework}`)",
        f"{intro} {backend.preset_note}" if backend.preset_note else intro,
        table(header, _rows(main, defaults, purposes, flagged)),
    ]
    if backend.option_keys:
        parts.append(_own_keys_section(framework))
    parts.append(_upstream_section(framework, schema, {p.name for p in main}))
    return "\n\n".join(parts)


def _own_keys_section(framework: str) -> str:
    """The backend's own config keys that stand for Primus options: set there, checked as ours."""
    backend = backend_named(framework)
    pairs = ", ".join(f"{code(key)} for {code(option)}" for option, key in upstream_keys(framework).items())
    return (
        f"### {backend.title}'s own keys for Primus options\n\nSet where {backend.title}'s docs say, checked and "
        f"honoured as the other backends' Primus option: {pairs}. {backend.option_keys_note}"
    )


def _flagged(params: Iterable[Param]) -> bool:  # an upstream of command-line flags (argparse): its keys untyped
    return any(p.option or p.true_flag or p.false_flag for p in params)


def _flag(param: Param) -> str:
    """Upstream's command-line spelling: ``--opt``, or a switch with the value it sets."""
    if param.option:
        return code(param.option)
    if param.true_flag and param.false_flag:
        return f"{code(param.true_flag)} / {code(param.false_flag)}"
    return f"{code(param.true_flag)} (true)" if param.true_flag else f"{code(param.false_flag or '')} (false)"


def _upstream_section(framework: str, schema: Schema, shown: set[str]) -> str:
    rest = [p for n, p in schema.params.items() if n not in shown]
    table_file = backend_named(framework).upstream_table()  # the release installed here, else the newest
    release = " ".join(next(iter(upstream_tables.load(table_file).items()))).replace("_", "-")  # its first key
    if _flagged(rest):
        header, rows = (
            ["Parameter", "Default", "Type", "Flag"],
            [[code(p.name), code(yaml_text(p.default)), p.expected(), _flag(p)] for p in rest],
        )
        spelling = "In YAML, write the name as it is here; on upstream's command line (`primus-run`), the flag."
    else:
        header, rows = (
            ["Parameter", "Default", "Type"],
            [[code(p.name), code(yaml_text(p.default)), p.expected()] for p in rest],
        )
        spelling = "Types are upstream's own annotations; a value of another type is refused before the job starts."
    return (
        f"### Every other {backend_named(framework).upstream_key_kind}\n\nUpstream's defaults, which the preset "
        f"leaves alone: {len(rest)} of {release} (from `{table_file.relative_to(CONFIGS_DIR.parents[1])}`). "
        f"{spelling}\n\n{table(header, rows)}"
    )


def render_options(spec: Path) -> str:
    purposes = spec_purposes(spec)
    launch = [
        [code(f"launch.{p.name}"), code(yaml_text(p.default)), p.expected(), p.help]
        for p in LAUNCH_SCHEMA.params.values()
    ]
    return fill(
        "options.md",
        preset=PRESET,
        backends="\n\n".join(_backend_section(framework, purposes) for framework in FRAMEWORKS),
        launch_table=table(["Parameter", "Default", "Type", "Description"], launch),
    )
