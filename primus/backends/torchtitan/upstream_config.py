"""An experiment's sections set on upstream's config before the command line is parsed onto it, so ``training:
{steps: 5}`` in YAML means ``--training.steps 5`` and a flag still wins. Keys upstream does not have are errors,
reported together, with a did-you-mean. What upstream reads only from its command line is named by ``model:
{module, config}`` on 0.3 and ``job.config_file`` on 0.2.2 (``entry.upstream_argv``)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from primus.backends.torchtitan.experiment import MODEL_SECTION
from primus.config import ConfigError

CONFIG_FUNCTION_KEYS = ("module", "config")  # of MODEL_SECTION, on 0.3


def config_function_sections(params: Mapping[str, Any]) -> dict[str, Any]:
    """0.3: the experiment minus ``model`` (the config function it names is already loaded)."""
    return {k: v for k, v in params.items() if k != MODEL_SECTION}


def job_config_sections(params: Mapping[str, Any]) -> dict[str, Any]:
    """0.2.2: the experiment as ``JobConfig`` sections. Primus's ``dump_folder`` (what `primus train`
    derives, 0.3's field) is ``job.dump_folder`` unless the experiment sets that; a 0.3 config function
    named in ``model`` is an error with the 0.2.2 way to say it."""
    model = params.get(MODEL_SECTION, {})
    named = [k for k in CONFIG_FUNCTION_KEYS if isinstance(model, Mapping) and k in model]
    if named:
        raise ConfigError(
            [
                f"torchtitan.model.{k}={model[k]!r}: torchtitan 0.2.2 has no --{k} (config functions "
                f"came in 0.3); name the TOML job file with job.config_file and the model with "
                f"model.name and model.flavor, e.g. model: {{name: llama3, flavor: debugmodel}}"
                for k in named
            ]
        )
    sections = dict(params)
    if "dump_folder" in sections:
        dump_folder, job = sections.pop("dump_folder"), sections.get("job") or {}
        if isinstance(job, Mapping) and "dump_folder" not in job:  # not a mapping: apply_sections reports it
            sections["job"] = {**job, "dump_folder": dump_folder}
    return sections


def apply_sections(config: Any, params: Mapping[str, Any]) -> None:
    problems: list[str] = []
    _apply(config, params, "torchtitan", problems)
    if problems:
        raise ConfigError(problems)


def _apply(target: Any, values: Mapping[str, Any], path: str, problems: list[str]) -> None:
    names = [f.name for f in dataclasses.fields(target) if f.init and not f.name.startswith("_")]
    for key, value in values.items():
        dotted = f"{path}.{key}"
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(
                f"{dotted}: {type(target).__qualname__} has no field {key!r}; {hint}fields: {', '.join(sorted(names))}"
            )
            continue
        current = getattr(target, key)
        if dataclasses.is_dataclass(current):
            if isinstance(value, Mapping):
                _apply(current, value, dotted, problems)
            else:
                problems.append(
                    f"{dotted}={value!r}: this is a section of upstream's config; give a mapping of "
                    f"its fields, e.g. {key}: {{...}}"
                )
            continue
        problem = _type_problem(current, value)
        if problem:
            problems.append(f"{dotted}={value!r}: {problem}")
        elif isinstance(current, int) and not isinstance(current, bool) and isinstance(value, float):
            setattr(target, key, int(value))  # 1e3 is a float in YAML 1.2; upstream's field is an int
        else:
            setattr(target, key, value)


def _type_problem(current: Any, value: Any) -> str | None:
    """Upstream's default tells the type (tyro would check a command-line value the same way)."""
    if current is None or value is None:
        return None
    if isinstance(current, bool) != isinstance(value, bool):
        return f"expected {type(current).__name__} like upstream's default {current!r}"
    if isinstance(current, (int, float)) and not isinstance(value, (int, float)):
        return f"expected a number like upstream's default {current!r}"
    if (
        isinstance(current, int)
        and not isinstance(current, bool)
        and isinstance(value, float)
        and not value.is_integer()
    ):
        return f"expected a whole number like upstream's default {current!r}"
    if isinstance(current, str) and not isinstance(value, str):
        return f"expected a string like upstream's default {current!r}; quote it"
    if isinstance(current, (list, tuple)) and not isinstance(value, (list, tuple)):
        return f"expected a list like upstream's default {current!r}"
    return None
