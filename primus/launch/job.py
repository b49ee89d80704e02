"""What every launcher starts: the module's entry point, the run directory and the two variables that
carry the experiment to every rank.

PRIMUS_CONFIG (the YAML), PRIMUS_CONFIG_OVERRIDES (the command-line overrides, JSON) and PRIMUS_RUN_DIR
reach each process through the environment, so every rank, on every node, resolves the same
configuration and writes into the same run directory (every backend reads PRIMUS_RUN_DIR:
``primus.config.run_directory.given_run_dir``). What differs by backend (where its checkpoints go, the overrides
the launcher adds) its ``LaunchRules`` say.

Each backend runs on its interpreter: one with an ``Environment`` of its own (a JAX one) on that environment's."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from primus.config import Experiment, ModuleConfig
from primus.config.environment import CONFIG_ENV, OVERRIDES_ENV, RUN_DIR_ENV
from primus.config.run_directory import choose_run_dir, timestamp
from primus.upstreams.backends import backend_named
from primus.upstreams.release import UPSTREAM_CHECK_ENV


@dataclass(frozen=True)
class Job:
    name: str  # the experiment's name
    entry: str  # the module run with python -m
    run_dir: Path
    # CONFIG_ENV, OVERRIDES_ENV, RUN_DIR_ENV (and UPSTREAM_CHECK_ENV when the experiment sets it): what every rank
    # needs, no secret among them
    env: dict[str, str]
    source: Path  # the experiment file


def select_module(exp: Experiment, name: str | None) -> ModuleConfig:
    if name is not None:
        if name not in exp.modules:
            raise ValueError(f"--module {name!r}: the experiment has modules {sorted(exp.modules)}")
        return exp.modules[name]
    if len(exp.modules) != 1:
        raise ValueError(f"the experiment has modules {sorted(exp.modules)}: choose one with --module NAME")
    return next(iter(exp.modules.values()))


def interpreter(framework: str, default: str = sys.executable, environ: Mapping[str, str] = os.environ) -> str:
    """The Python that runs ``framework``: ``default`` (this one) unless the framework has its own environment;
    then the interpreter its variable names, else this one if it has the framework installed, else the
    environment next to this one. Raises ValueError saying how to set it up."""
    own = backend_named(framework).environment
    if own is None:
        return default
    packages, variable, venv, setup = own.packages, own.variable, own.folder, own.setup
    if environ.get(variable):
        return environ[variable]
    if all(importlib.util.find_spec(package) is not None for package in packages):
        return default
    beside = Path(sys.prefix).parent / venv / "bin" / "python"
    if beside.is_file():
        return str(beside)
    raise ValueError(
        f"framework {framework!r} needs its own Python environment and none was found (looked at "
        f"{variable}, this interpreter, {beside}): create it with `{setup} {beside.parent.parent}`, or set "
        f"{variable} to a Python that has {', '.join(packages)} and primus installed"
    )


def run_directory(exp: Experiment, module: ModuleConfig, now: float | None = None, run_id: str | None = None) -> Path:
    """The shared rule (primus.config.run_directory): the backend's own run directory when its settings name one
    (its ``LaunchRules.own_run_dir``); <checkpoint folder>/primus when the module checkpoints,
    so launching the same experiment again resumes its tracker runs; else a folder under workspace/exp_name
    named by the multi-node job's id (the same on every node) or the time."""
    rules = backend_named(module.framework).launch_rules()
    own = rules.own_run_dir(module)
    if own is not None:
        return own
    return choose_run_dir(
        explicit=module.params.get("primus_run_dir"),
        checkpoint_dir=rules.checkpoint_dir(exp, module),
        fresh=exp.workspace / exp.name / (run_id or timestamp(now)),
    )


def prepare_job(exp: Experiment, module: ModuleConfig, overrides: Sequence[str], run_id: str | None = None) -> Job:
    backend = backend_named(module.framework)
    rules = backend.launch_rules()
    problems = rules.problems(module)
    if problems:
        raise ValueError("; ".join(problems))
    run_dir = run_directory(exp, module, run_id=run_id)
    overrides = [*overrides, *rules.overrides(exp, module, run_dir, f"modules.{module.name}.overrides")]
    env = {CONFIG_ENV: str(exp.source), OVERRIDES_ENV: json.dumps(overrides), RUN_DIR_ENV: str(run_dir)}
    upstream_check = (exp.raw.get("launch") or {}).get("upstream_check")
    if upstream_check:  # the experiment's say over the shell's
        env[UPSTREAM_CHECK_ENV] = upstream_check
    return Job(name=exp.name, entry=backend.entry_module, run_dir=run_dir, env=env, source=exp.source)
