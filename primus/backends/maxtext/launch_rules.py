"""What `primus train` asks of a MaxText module: MaxText's own ``<base_output_directory>/<run_name>`` is the run
directory when the experiment names both (its checkpoints live there)."""

from __future__ import annotations

from pathlib import Path

from primus.config.experiment import ModuleConfig
from primus.config.launch_rules import LaunchRules


class MaxTextLaunchRules(LaunchRules):
    def own_run_dir(self, module: ModuleConfig) -> Path | None:
        base, name = module.params.get("base_output_directory"), module.params.get("run_name")
        return Path(base) / str(name) if base and name else None
