"""The command that runs an experiment's module on this machine: one process, or torchrun.

The experiment reaches the child through the environment — PRIMUS_CONFIG (the YAML) and
PRIMUS_CONFIG_OVERRIDES (the command-line overrides plus the run directory, JSON) — so every rank
resolves the same configuration and writes into the same run directory."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from primus.config import Experiment, ModuleConfig

# python -m <entry> runs the framework's upstream trainer with Primus's patches active
ENTRY_MODULES = {"megatron": "primus.backends.megatron", "torchtitan": "primus.backends.torchtitan"}


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    env: dict[str, str]
    run_dir: Path


def select_module(exp: Experiment, name: str | None) -> ModuleConfig:
    if name is not None:
        if name not in exp.modules:
            raise ValueError(f"--module {name!r}: the experiment has modules {sorted(exp.modules)}")
        return exp.modules[name]
    if len(exp.modules) != 1:
        raise ValueError(f"the experiment has modules {sorted(exp.modules)}: choose one with --module NAME")
    return next(iter(exp.modules.values()))


def run_directory(exp: Experiment, module: ModuleConfig, now: float | None = None) -> Path:
    """<save>/primus when the module checkpoints (a restart resumes the same tracker runs), else a new
    folder per launch under workspace/exp_name."""
    if module.params.get("primus_run_dir"):
        return Path(module.params["primus_run_dir"])
    if module.params.get("save"):
        return Path(module.params["save"]) / "primus"
    return exp.workspace / exp.name / time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


def plan_local_launch(exp: Experiment, module: ModuleConfig, overrides: Sequence[str], nproc_per_node: int,
                      environ: Mapping[str, str] = os.environ, python: str = sys.executable) -> LaunchPlan:
    entry = ENTRY_MODULES.get(module.framework)
    if entry is None:
        raise ValueError(f"framework {module.framework!r} cannot be launched yet; supported: {sorted(ENTRY_MODULES)}")
    if nproc_per_node < 1:
        raise ValueError(f"--nproc-per-node {nproc_per_node}: must be at least 1")
    run_dir = run_directory(exp, module)
    env = dict(environ)
    overrides = [*overrides, *_derived_overrides(exp, module, run_dir)]
    env.update({"PRIMUS_CONFIG": str(exp.source), "PRIMUS_CONFIG_OVERRIDES": json.dumps(overrides)})
    if nproc_per_node == 1:
        argv = [python, "-m", entry]
    else:
        argv = [python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc_per_node}", "--nnodes=1",
                "--master_addr=127.0.0.1", f"--master_port={_free_port()}", "-m", entry]
    return LaunchPlan(argv=argv, env=env, run_dir=run_dir)


def _derived_overrides(exp: Experiment, module: ModuleConfig, run_dir: Path) -> list[str]:
    """The run directory, and the experiment's name as the MLflow experiment when none is set."""
    prefix = f"modules.{module.name}.overrides"
    derived = [f"{prefix}.primus_run_dir={run_dir}"]
    if module.framework == "megatron" and not module.params.get("mlflow_experiment_name"):
        derived.append(f"{prefix}.mlflow_experiment_name={exp.name}")
    return derived


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
