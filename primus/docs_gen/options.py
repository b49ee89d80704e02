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

from primus.config import yaml12
from primus.config.files import load_with_extends
from primus.config.paths import CONFIGS_DIR, MODULE_PRESETS_DIR
from primus.config.schema import Param, Schema
from primus.config.schemas import FRAMEWORKS, maxtext, megatron_bridge, schema_for, torchtitan, upstream_tables
from primus.config.schemas.launch import LAUNCH_SCHEMA
from primus.config.schemas.megatron_table import PINNED_MINOR, table_path
from primus.config.schemas.tracking import MEGATRON_BRIDGE, upstream_keys
from primus.config.tree import join
from primus.docs_gen.markdown import code, table, yaml_text

PRESET = "pre_trainer.yaml"
BACKEND_TITLES = {
    "megatron": "Megatron",
    "torchtitan": "TorchTitan",
    "maxtext": "MaxText",
    "megatron_bridge": "Megatron-Bridge",
}
_SPEC_ROW = re.compile(r"^\|\s*(`[^|]*`)\s*\|.*\|\s*([^|]*?)\s*\|\s*$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
UPSTREAM_NAMES = {
    "megatron": "megatron-core argument",
    "torchtitan": "torchtitan config field",
    "maxtext": "MaxText config key",
    "megatron_bridge": "ConfigContainer field",
}
# where the preset's value of an upstream key gives way to the user's own upstream config
PRESET_GIVES_WAY = {
    "maxtext": "The preset's value of an upstream key gives way to your own MaxText config file (`my.yml` in "
    "`primus-run --config exp.yaml python -m maxtext.trainers.pre_train.train my.yml`, and the parents it "
    "names with `base_config:`, short of MaxText's `base.yml`) where that file sets the key; the experiment's "
    "`overrides` and the command line win over the file.",
    "megatron_bridge": "Every other key is a field of the ConfigContainer the recipe returns, applied to it as "
    "run_recipe.py's `KEY=VALUE` overrides; a field the recipe's config lacks is refused before training.",
}


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
    params: Iterable[Param], defaults: Mapping[str, Any], purposes: Mapping[str, str], upstream_column: bool
) -> list[list[str]]:
    rows = []
    for p in params:
        upstream = ["—" if p.primus else code(yaml_text(p.default))] if upstream_column else []
        rows.append(
            [
                code(p.name),
                code(yaml_text(defaults.get(p.name, p.default))),
                *upstream,
                p.expected(),
                "Primus" if p.primus else "upstream",
                p.help or purposes.get(p.name, ""),
            ]
        )
    return rows


def _backend_section(framework: str, purposes: Mapping[str, str]) -> str:
    schema, defaults = schema_for(framework), preset_defaults(framework)
    # the preset's keys in its order (the spec's sections), then the schema's others that are Primus's own
    main = [schema.params[n] for n in defaults] + [
        p
        for n, p in schema.params.items()
        if n not in defaults and (p.primus or (framework != "megatron" and p.annotation is None))
    ]
    upstream_column = framework == "megatron"
    header = [
        "Parameter",
        "Default",
        *(["Upstream default"] if upstream_column else []),
        "Type",
        "Owner",
        "Description",
    ]
    parts = [
        f"## {BACKEND_TITLES[framework]} (`framework: {framework}`)",
        " ".join(
            [f"Logging and tracking parameters: what `config: {PRESET}` sets, and Primus's own."]
            + ([PRESET_GIVES_WAY[framework]] if framework in PRESET_GIVES_WAY else [])
        ),
        table(header, _rows(main, defaults, purposes, upstream_column)),
    ]
    if framework == "megatron_bridge":
        parts.append(_bridge_keys_section())
    parts.append(_upstream_section(framework, schema, {p.name for p in main}))
    return "\n\n".join(parts)


def _bridge_keys_section() -> str:
    """Bridge's own logger keys that stand for Primus options: set there, checked as ours."""
    pairs = ", ".join(f"{code(key)} for {code(option)}" for option, key in upstream_keys(MEGATRON_BRIDGE).items())
    return "\n\n".join(
        [
            "### Bridge's own keys for Primus options",
            f"Set where Bridge's docs say, checked and honoured as the other backends' Primus option: {pairs}. "
            "`logger.tensorboard_dir`, `logger.wandb_project` and `logger.mlflow_experiment` turn TensorBoard, W&B "
            "and MLflow on; `logger.tensorboard_queue_size`, `logger.wandb_entity`, `logger.wandb_exp_name`, "
            "`logger.wandb_save_dir` and `logger.mlflow_tracking_uri` keep their meaning; the run directory is "
            "`<checkpoint.save>/primus` when the job checkpoints (under `primus train`, the launcher's).",
        ]
    )


def _flag(param: Param) -> str:
    """Upstream's command-line spelling: ``--opt``, or a switch with the value it sets."""
    if param.option:
        return code(param.option)
    if param.true_flag and param.false_flag:
        return f"{code(param.true_flag)} / {code(param.false_flag)}"
    return f"{code(param.true_flag)} (true)" if param.true_flag else f"{code(param.false_flag or '')} (false)"


def _upstream_section(framework: str, schema: Schema, shown: set[str]) -> str:
    rest = [p for n, p in schema.params.items() if n not in shown]
    if framework == "megatron":
        table_file = table_path(PINNED_MINOR)  # other releases have their own table
        release = f"megatron-core {yaml12.load_file(table_file)['megatron_core']}"
        header, rows = (
            ["Parameter", "Default", "Type", "Flag"],
            [[code(p.name), code(yaml_text(p.default)), p.expected(), _flag(p)] for p in rest],
        )
        spelling = "In YAML, write the name as it is here; on upstream's command line (`primus-run`), the flag."
    else:
        table_file = {"torchtitan": torchtitan.table, "maxtext": maxtext.table, MEGATRON_BRIDGE: megatron_bridge.table}[
            framework
        ]()
        release = upstream_tables.load(table_file)[framework]
        header, rows = (
            ["Parameter", "Default", "Type"],
            [[code(p.name), code(yaml_text(p.default)), p.expected()] for p in rest],
        )
        spelling = "Types are upstream's own annotations; a value of another type is refused before the job starts."
    noun = UPSTREAM_NAMES[framework]
    return "\n\n".join(
        [
            f"### Every other {noun}",
            f"Upstream's defaults, which the preset leaves alone: {len(rest)} of {release} "
            f"(from `{table_file.relative_to(CONFIGS_DIR.parents[1])}`). {spelling}",
            table(header, rows),
        ]
    )


def _launch_section() -> str:
    rows = [
        [code(f"launch.{p.name}"), code(yaml_text(p.default)), p.expected(), p.help]
        for p in LAUNCH_SCHEMA.params.values()
    ]
    return "\n\n".join(
        [
            "## The experiment's `launch:` block",
            "Where and how `primus train` starts the job; `primus train`'s command-line flags override these keys.",
            table(["Parameter", "Default", "Type", "Description"], rows),
        ]
    )


def render_options(spec: Path) -> str:
    purposes = spec_purposes(spec)
    intro = (
        f"Every option Primus validates, per backend, with its default. A module's default is what "
        f"`config: {PRESET}` gives it (the packaged preset under `primus/configs/modules/<backend>/`, with the "
        f"presets it extends); a key it does not set keeps upstream's default. An unknown key is an error with "
        f"a did-you-mean. Owner: Primus's own parameter, or upstream's (passed to the trainer as it is)."
    )
    sections = [_backend_section(framework, purposes) for framework in FRAMEWORKS]
    return "\n\n".join(["# Options", intro, *sections, _launch_section()]) + "\n"
