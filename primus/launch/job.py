"""What every launcher starts: the module's entry point, the run directory and the two variables that
carry the experiment to every rank.

PRIMUS_CONFIG (the YAML), PRIMUS_CONFIG_OVERRIDES (the command-line overrides, JSON) and PRIMUS_RUN_DIR
reach each process through the environment, so every rank, on every node, resolves the same
configuration and writes into the same run directory. Megatron takes the run directory as its
``primus_run_dir`` argument, TorchTitan and MaxText from PRIMUS_RUN_DIR; TorchTitan also gets its
``dump_folder`` (checkpoints, traces) from here, unless the experiment names one.

Each framework runs on its interpreter: MaxText (JAX) has its own environment, ``.venv-maxtext``."""

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
from primus.tracking.journal.files import TENSORBOARD_DIR
from primus.upstreams.backends import backend_named
from primus.upstreams.release import UPSTREAM_CHECK_ENV

TITAN_CHECKPOINT_FOLDER = "checkpoint"  # upstream's checkpoint.folder default (torchtitan 0.2.2 and 0.3)


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
    """The shared rule (primus.config.run_directory): <checkpoint folder>/primus when the module checkpoints,
    so launching the same experiment again resumes its tracker runs; MaxText's own
    <base_output_directory>/<run_name> when the experiment names both (its checkpoints live there); else a
    folder under workspace/exp_name named by the multi-node job's id (the same on every node) or the time."""
    params = module.params
    if module.framework == "maxtext" and params.get("base_output_directory") and params.get("run_name"):
        return Path(params["base_output_directory"]) / str(params["run_name"])
    return choose_run_dir(
        explicit=params.get("primus_run_dir"),
        checkpoint_dir=_checkpoint_dir(exp, module),
        fresh=exp.workspace / exp.name / (run_id or timestamp(now)),
    )


def _checkpoint_dir(exp: Experiment, module: ModuleConfig) -> Path | str | None:
    """Where the module's checkpoints go when the experiment turns checkpointing on."""
    if module.framework == "megatron":
        return module.params.get("save")
    if module.framework == "megatron_bridge":
        return (module.params.get("checkpoint") or {}).get("save")
    checkpoint = _titan_checkpoint(module)
    if checkpoint is not None:
        return _titan_dump_folder(exp, module) / str(checkpoint.get("folder") or TITAN_CHECKPOINT_FOLDER)
    return None


def _titan_checkpoint(module: ModuleConfig) -> dict | None:
    """A TorchTitan module's checkpoint section when it enables checkpointing."""
    checkpoint = module.params.get("checkpoint") or {}
    return checkpoint if module.framework == "torchtitan" and checkpoint.get("enable") else None


def _titan_given_dump_folder(module: ModuleConfig) -> str | None:
    """The dump folder the experiment names: ``dump_folder`` (torchtitan 0.3's field) or ``job.dump_folder``
    (0.2.2's)."""
    job = module.params.get("job")
    return module.params.get("dump_folder") or (job.get("dump_folder") if isinstance(job, Mapping) else None)


def _titan_dump_folder(exp: Experiment, module: ModuleConfig, run_dir: Path | None = None) -> Path:
    """The experiment's dump_folder; else, when checkpointing, one every launch shares (workspace/exp_name,
    which holds <checkpoint folder>/primus); else the run directory."""
    given = _titan_given_dump_folder(module)
    if given:
        return Path(given)
    if _titan_checkpoint(module) is not None or run_dir is None:
        return exp.workspace / exp.name
    return run_dir


def prepare_job(exp: Experiment, module: ModuleConfig, overrides: Sequence[str], run_id: str | None = None) -> Job:
    entry = backend_named(module.framework).entry_module
    if module.framework == "megatron_bridge" and not module.params.get("recipe"):
        raise ValueError(
            f"modules.{module.name}.overrides.recipe: missing; name a recipe of megatron.bridge.recipes, e.g. "
            "recipe: vanilla_gpt_pretrain_config"
        )
    run_dir = run_directory(exp, module, run_id=run_id)
    overrides = [*overrides, *_derived_overrides(exp, module, run_dir)]
    env = {CONFIG_ENV: str(exp.source), OVERRIDES_ENV: json.dumps(overrides), RUN_DIR_ENV: str(run_dir)}
    upstream_check = (exp.raw.get("launch") or {}).get("upstream_check")
    if upstream_check:  # the experiment's say over the shell's
        env[UPSTREAM_CHECK_ENV] = upstream_check
    return Job(name=exp.name, entry=entry, run_dir=run_dir, env=env, source=exp.source)


def _derived_overrides(exp: Experiment, module: ModuleConfig, run_dir: Path) -> list[str]:
    """Megatron's run directory argument, TorchTitan's dump folder, and the experiment's name as the MLflow
    experiment when none is set."""
    prefix = f"modules.{module.name}.overrides"
    if module.framework == "torchtitan":
        metrics = module.params.get("metrics") or {}
        derived = (
            []
            if _titan_given_dump_folder(module)
            else [f"{prefix}.dump_folder={_titan_dump_folder(exp, module, run_dir)}"]
        )
        if not metrics.get("mlflow_experiment_name"):
            derived.append(f"{prefix}.metrics.mlflow_experiment_name={exp.name}")
        return derived
    if module.framework == "megatron_bridge":
        return _bridge_overrides(module, prefix, run_dir)
    if module.framework not in ("megatron", "maxtext"):
        return []
    derived = [f"{prefix}.primus_run_dir={run_dir}"] if module.framework == "megatron" else []
    if not module.params.get("mlflow_experiment_name"):
        derived.append(f"{prefix}.mlflow_experiment_name={exp.name}")
    return derived


def _bridge_overrides(module: ModuleConfig, prefix: str, run_dir: Path) -> list[str]:
    """Bridge's TensorBoard folder in the run directory unless the experiment names one (or null: off); a recipe's
    own default is a folder under the working directory."""
    logger = module.params.get("logger") or {}
    return [] if "tensorboard_dir" in logger else [f"{prefix}.logger.tensorboard_dir={run_dir / TENSORBOARD_DIR}"]
