"""What `primus train` asks of a Megatron module: its checkpoints go to ``save``, and its tracker switches are
Megatron's ``disable_*`` (W&B also on by ``wandb_project``, upstream's rule)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from primus.backends.megatron.schema import mlflow_enabled, wandb_enabled
from primus.config.experiment import Experiment, ModuleConfig
from primus.config.launch_rules import LaunchRules


class MegatronLaunchRules(LaunchRules):
    def checkpoint_dir(self, exp: Experiment, module: ModuleConfig) -> Path | str | None:
        return module.params.get("save")

    def trackers_on(self, module: ModuleConfig) -> tuple[bool, bool]:
        p = module.params
        args = SimpleNamespace(
            disable_wandb=p.get("disable_wandb"),
            wandb_project=p.get("wandb_project"),
            disable_mlflow=p.get("disable_mlflow", True),
        )
        return wandb_enabled(args), mlflow_enabled(args)
