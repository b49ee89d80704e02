"""What `primus train` asks of a Megatron-Bridge module: a recipe, its checkpoints in ``checkpoint.save``, its
TensorBoard folder in the run directory unless the experiment names one, and its trackers turned on by Bridge's
own ``logger`` keys."""

from __future__ import annotations

from pathlib import Path

from primus.config.experiment import Experiment, ModuleConfig
from primus.config.launch_rules import LaunchRules
from primus.tracking.journal.files import TENSORBOARD_DIR


class BridgeLaunchRules(LaunchRules):
    def checkpoint_dir(self, exp: Experiment, module: ModuleConfig) -> Path | str | None:
        return (module.params.get("checkpoint") or {}).get("save")

    def overrides(self, exp: Experiment, module: ModuleConfig, run_dir: Path, prefix: str) -> list[str]:
        """A recipe's own TensorBoard default is a folder under the working directory; null in the experiment
        turns it off."""
        logger = module.params.get("logger") or {}
        return [] if "tensorboard_dir" in logger else [f"{prefix}.logger.tensorboard_dir={run_dir / TENSORBOARD_DIR}"]

    def problems(self, module: ModuleConfig) -> list[str]:
        if module.params.get("recipe"):
            return []
        return [
            f"modules.{module.name}.overrides.recipe: missing; name a recipe of megatron.bridge.recipes, e.g. "
            "recipe: vanilla_gpt_pretrain_config"
        ]

    def trackers_on(self, module: ModuleConfig) -> tuple[bool, bool]:
        logger = module.params.get("logger") or {}
        return bool(logger.get("wandb_project")), bool(logger.get("mlflow_experiment"))
