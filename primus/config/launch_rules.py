"""What `primus train` asks a module's backend before it launches the job (``Backend.launch_rules``): where its
checkpoints go (the run directory follows them), a run directory of its own, the overrides the launcher adds, what
it refuses up front, and which trackers its parameters turn on (their credentials are checked before launch).
The defaults serve a backend that keeps Primus's options by their names in its section; a backend overrides what
differs (``primus/backends/<name>/launch_rules.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from primus.config.experiment import Experiment, ModuleConfig


class LaunchRules:
    def __init__(self, section: str = ""):
        self.section = section  # where the backend keeps Primus's options (``Backend.option_section``)

    def checkpoint_dir(self, exp: Experiment, module: ModuleConfig) -> Path | str | None:
        """Where the module's checkpoints go when the experiment turns checkpointing on."""
        return None

    def own_run_dir(self, module: ModuleConfig) -> Path | None:
        """A run directory the backend's own settings name (MaxText's output folder), before the shared rule."""
        return None

    def overrides(self, exp: Experiment, module: ModuleConfig, run_dir: Path, prefix: str) -> list[str]:
        """What the launcher adds to the module's overrides (``prefix.key=value``): the experiment's name as the
        MLflow experiment when none is set."""
        if self._options(module).get("mlflow_experiment_name"):
            return []
        return [f"{prefix}.{self.section}mlflow_experiment_name={exp.name}"]

    def problems(self, module: ModuleConfig) -> list[str]:
        """What the module lacks to be launched at all, key and fix named."""
        return []

    def trackers_on(self, module: ModuleConfig) -> tuple[bool, bool]:
        """(W&B on, MLflow on) as the backend will decide them from the module's parameters."""
        options = self._options(module)
        return bool(options.get("enable_wandb")), bool(options.get("enable_mlflow"))

    def _options(self, module: ModuleConfig) -> dict[str, Any]:
        params: Any = module.params
        for part in self.section.rstrip(".").split(".") if self.section else ():
            params = params.get(part) or {}
        return params
