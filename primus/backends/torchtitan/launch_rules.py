"""What `primus train` asks of a TorchTitan module: its checkpoints in ``<dump folder>/<checkpoint.folder>`` when
``checkpoint.enable``, and the dump folder the launcher gives it when the experiment names none: one every launch
shares when it checkpoints (so a relaunch finds ``<checkpoint folder>/primus``), else the run directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from primus.config.experiment import Experiment, ModuleConfig
from primus.config.launch_rules import LaunchRules

CHECKPOINT_FOLDER = "checkpoint"  # upstream's checkpoint.folder default (torchtitan 0.2.2 and 0.3)


class TorchTitanLaunchRules(LaunchRules):
    def checkpoint_dir(self, exp: Experiment, module: ModuleConfig) -> Path | str | None:
        checkpoint = _checkpoint(module)
        if checkpoint is None:
            return None
        return _dump_folder(exp, module) / str(checkpoint.get("folder") or CHECKPOINT_FOLDER)

    def overrides(self, exp: Experiment, module: ModuleConfig, run_dir: Path, prefix: str) -> list[str]:
        given = _given_dump_folder(module)
        dump_folder = [] if given else [f"{prefix}.dump_folder={_dump_folder(exp, module, run_dir)}"]
        return dump_folder + super().overrides(exp, module, run_dir, prefix)


def _checkpoint(module: ModuleConfig) -> dict | None:
    checkpoint = module.params.get("checkpoint") or {}
    return checkpoint if checkpoint.get("enable") else None


def _given_dump_folder(module: ModuleConfig) -> str | None:
    """The dump folder the experiment names: ``dump_folder`` (torchtitan 0.3's field) or ``job.dump_folder``
    (0.2.2's)."""
    job = module.params.get("job")
    return module.params.get("dump_folder") or (job.get("dump_folder") if isinstance(job, Mapping) else None)


def _dump_folder(exp: Experiment, module: ModuleConfig, run_dir: Path | None = None) -> Path:
    given = _given_dump_folder(module)
    if given:
        return Path(given)
    if _checkpoint(module) is not None or run_dir is None:
        return exp.workspace / exp.name
    return run_dir
