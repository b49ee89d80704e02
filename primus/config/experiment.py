"""Load an experiment YAML into typed, validated module configs.

Resolution for each module, later wins: module preset (``primus/configs/modules/<framework>/``,
with its own ``extends:``) <- model preset (``primus/configs/models/<framework>/``) <- the
module's ``overrides:`` <- command-line overrides. Every problem is collected and raised at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from primus.config.errors import ConfigError
from primus.config.files import load_with_extends
from primus.config.overrides import EXPERIMENT_KEYS, sort_overrides
from primus.config.paths import MODEL_PRESETS_DIR, MODULE_PRESETS_DIR
from primus.config.schema import Param, Schema
from primus.config.schemas import FRAMEWORKS, schema_for
from primus.config.schemas.launch import LAUNCH_SCHEMA
from primus.config.tree import deep_merge, leaf_paths, set_dotted, without_paths
from primus.redaction import redact_mapping

_EXPERIMENT = Schema(
    "top-level key",
    [
        Param("work_group", "str", nullable=True),
        Param("user_name", "str", nullable=True),
        Param("exp_name", "str"),
        Param("workspace", "str"),
        Param("launch", "any", nullable=True),
        Param("modules", "any"),
    ],
)
_MODULE_BLOCK = Schema(
    "module key",
    [
        Param("framework", "str", choices=FRAMEWORKS),
        Param("config", "str"),
        Param("model", "str", nullable=True),
        Param("overrides", "any", nullable=True),
    ],
)

_MODULE_BLOCK_HELP = {
    "framework": f"name the backend: {' | '.join(FRAMEWORKS)}",
    "config": "name a module preset under primus/configs/modules/<framework>/, e.g. pre_trainer.yaml",
}


@dataclass(frozen=True)
class ModuleConfig:
    name: str
    framework: str
    config: str  # the module preset, as named in the experiment
    model: str | None  # the model preset, as named in the experiment
    params: dict[str, Any]  # every resolved parameter, typed; TorchTitan sections are nested dicts
    primus_keys: frozenset[str]  # Primus's own parameters (dotted inside sections): not upstream's
    schema: Schema
    # dotted keys whose value only the module preset gave (not the model preset, overrides or command line): the
    # spec's defaults, which a job file of upstream's own (a TOML, a config function) may set otherwise
    preset_defaults: frozenset[str] = frozenset()

    @property
    def upstream_preset_defaults(self) -> frozenset[str]:
        """Upstream's keys (not Primus's own) whose value only the module preset gave."""
        return self.preset_defaults - self.primus_keys

    def upstream_params_given(self) -> dict[str, Any]:
        """``params`` without upstream's keys that only the module preset set, for laying over a config that
        upstream built from the user's own job file: the job's values win over the preset's defaults."""
        return without_paths(self.params, self.upstream_preset_defaults)


@dataclass(frozen=True)
class Experiment:
    source: Path
    name: str
    workspace: Path
    modules: dict[str, ModuleConfig]
    raw: dict[str, Any]  # resolved and typed, NOT redacted: never print or upload it
    launch: dict[str, Any] = field(default_factory=dict)  # the typed launch: block (keys given only)

    def redacted(self) -> dict[str, Any]:
        """``raw`` with every secret hidden, for printing and uploading."""
        return redact_mapping(self.raw)


def load_experiment(
    path: str | os.PathLike[str], overrides: Iterable[str] = (), *, environ: Mapping[str, str] | None = None
) -> Experiment:
    """Load, resolve and validate; raise ``ConfigError`` listing every problem."""
    source = Path(path).resolve()
    environ = os.environ if environ is None else environ
    tree, problems = load_with_extends(source, environ)
    if problems and not tree:  # the file itself cannot be read: nothing else in it can be judged
        raise ConfigError(problems)
    modules_in_file = tree["modules"] if isinstance(tree.get("modules"), Mapping) else {}
    cli = sort_overrides(overrides, modules_in_file)
    problems += cli.problems
    for dotted, value in cli.tree.items():
        set_dotted(tree, dotted, value)

    top, found = _EXPERIMENT.validate({"exp_name": source.stem, "workspace": "./output", **tree}, str(source))
    problems += found
    launch = top.get("launch") or {}
    if isinstance(launch, Mapping):
        launch, found = LAUNCH_SCHEMA.validate(launch, f"{source}: launch")
        problems += found
    else:
        problems.append(f"{source}: launch: must be a mapping of launch settings, e.g. launch: {{launcher: slurm}}")
        launch = {}
    blocks = top.get("modules")
    if not isinstance(blocks, Mapping) or not blocks:
        problems.append(f"{source}: modules: missing; add at least one module, e.g. modules: {{pre_trainer: ...}}")
        blocks = {}

    modules: dict[str, ModuleConfig] = {}
    for name, block in blocks.items():
        module = _resolve_module(str(name), block, source.parent, environ, cli.modules.get(name, {}), problems)
        if module is not None:
            modules[module.name] = module
    if problems:
        raise ConfigError(problems)

    raw = {key: top.get(key) for key in EXPERIMENT_KEYS if key != "modules"}
    raw["modules"] = {
        name: {"framework": m.framework, "config": m.config, "model": m.model, "params": m.params}
        for name, m in modules.items()
    }
    workspace = Path(str(top["workspace"])).absolute()
    raw["workspace"] = str(workspace)
    raw["launch"] = launch
    return Experiment(
        source=source, name=str(top["exp_name"]), workspace=workspace, modules=modules, raw=raw, launch=launch
    )


def _resolve_module(
    name: str,
    block: Any,
    here: Path,
    environ: Mapping[str, str],
    cli_params: Mapping[str, Any],
    problems: list[str],
) -> ModuleConfig | None:
    where = f"modules.{name}"
    if not isinstance(block, Mapping):
        problems.append(f"{where}: must be a mapping with framework, config, model and overrides")
        return None
    block, found = _MODULE_BLOCK.validate(block, where)
    problems += found
    for key in ("framework", "config"):
        if block.get(key, "") == "":
            problems.append(f"{where}.{key}: missing; {_MODULE_BLOCK_HELP[key]}")
    framework, config, model = block.get("framework"), block.get("config"), block.get("model")
    if framework not in FRAMEWORKS or not isinstance(config, str) or not isinstance(model, (str, type(None))):
        return None

    trees: list[Mapping[str, Any]] = []  # module preset, model preset
    for preset_name, presets_dir in ((config, MODULE_PRESETS_DIR), (model, MODEL_PRESETS_DIR)):
        preset = preset_name and _find_preset(presets_dir / framework, preset_name, here, where, problems)
        tree: Mapping[str, Any] = {}
        if preset:
            tree, found = load_with_extends(preset, environ)
            problems += found
        trees.append(tree)
    overrides = block.get("overrides") or {}
    if not isinstance(overrides, Mapping):
        problems.append(f"{where}.overrides: must be a mapping of parameter: value")
        overrides = {}
    module_preset, given = trees[0], [*trees[1:], overrides, cli_params]
    params: dict[str, Any] = dict(module_preset)
    for tree in given:
        params = deep_merge(params, tree)
    preset_defaults = frozenset(leaf_paths(module_preset) - set().union(*(leaf_paths(t) for t in given)))

    schema = schema_for(framework)
    params, found = schema.validate(params, where)
    problems += found
    return ModuleConfig(name, framework, config, model, params, schema.primus_keys, schema, preset_defaults)


def _find_preset(presets_dir: Path, name: str, here: Path, where: str, problems: list[str]) -> Path | None:
    """A packaged preset by name, else a file relative to the experiment file."""
    for candidate in (presets_dir / name, here / name):
        if candidate.is_file():
            return candidate
    available = ", ".join(sorted(p.name for p in presets_dir.glob("*.yaml"))) or "none"
    problems.append(
        f"{where}: {name!r}: no such preset in {presets_dir} (available: {available}) nor next to the experiment file"
    )
    return None
