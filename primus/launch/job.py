"""What every launcher starts: the module's entry point, the run directory and the two variables that
carry the experiment to every rank.

PRIMUS_CONFIG (the YAML), PRIMUS_CONFIG_OVERRIDES (the command-line overrides, JSON) and PRIMUS_RUN_DIR
reach each process through the environment, so every rank, on every node, resolves the same
configuration and writes into the same run directory. Megatron takes the run directory as its
``primus_run_dir`` argument, TorchTitan from PRIMUS_RUN_DIR."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from primus.config import Experiment, ModuleConfig

# python -m <entry> runs the framework's upstream trainer with Primus's patches active
ENTRY_MODULES = {"megatron": "primus.backends.megatron", "torchtitan": "primus.backends.torchtitan"}
CONFIG_ENV = "PRIMUS_CONFIG"
OVERRIDES_ENV = "PRIMUS_CONFIG_OVERRIDES"
RUN_DIR_ENV = "PRIMUS_RUN_DIR"


@dataclass(frozen=True)
class Job:
    name: str  # the experiment's name
    entry: str  # the module run with python -m
    run_dir: Path
    env: dict[str, str]  # CONFIG_ENV, OVERRIDES_ENV, RUN_DIR_ENV: what every rank needs, no secret among them
    source: Path  # the experiment file


def select_module(exp: Experiment, name: str | None) -> ModuleConfig:
    if name is not None:
        if name not in exp.modules:
            raise ValueError(f"--module {name!r}: the experiment has modules {sorted(exp.modules)}")
        return exp.modules[name]
    if len(exp.modules) != 1:
        raise ValueError(f"the experiment has modules {sorted(exp.modules)}: choose one with --module NAME")
    return next(iter(exp.modules.values()))


def run_directory(exp: Experiment, module: ModuleConfig, now: float | None = None, run_id: str | None = None) -> Path:
    """<save>/primus when the module checkpoints (a restart resumes the same tracker runs), else a folder
    under workspace/exp_name named by the multi-node job's id (the same on every node) or the time."""
    if module.params.get("primus_run_dir"):
        return Path(module.params["primus_run_dir"])
    if module.params.get("save"):
        return Path(module.params["save"]) / "primus"
    return exp.workspace / exp.name / (run_id or time.strftime("%Y%m%d-%H%M%S", time.localtime(now)))


def prepare_job(exp: Experiment, module: ModuleConfig, overrides: Sequence[str], run_id: str | None = None) -> Job:
    entry = ENTRY_MODULES.get(module.framework)
    if entry is None:
        raise ValueError(f"framework {module.framework!r} cannot be launched yet; supported: {sorted(ENTRY_MODULES)}")
    run_dir = run_directory(exp, module, run_id=run_id)
    overrides = [*overrides, *_derived_overrides(exp, module, run_dir)]
    env = {CONFIG_ENV: str(exp.source), OVERRIDES_ENV: json.dumps(overrides), RUN_DIR_ENV: str(run_dir)}
    return Job(name=exp.name, entry=entry, run_dir=run_dir, env=env, source=exp.source)


def _derived_overrides(exp: Experiment, module: ModuleConfig, run_dir: Path) -> list[str]:
    """Megatron's run directory argument, and the experiment's name as its MLflow experiment when none is set."""
    if module.framework != "megatron":
        return []
    prefix = f"modules.{module.name}.overrides"
    derived = [f"{prefix}.primus_run_dir={run_dir}"]
    if not module.params.get("mlflow_experiment_name"):
        derived.append(f"{prefix}.mlflow_experiment_name={exp.name}")
    return derived
