"""What a tracked run is configured with, and the checks that run before any training starts.

The backends build a ``TrackingConfig`` from their own arguments; ``resolve()`` fills what is left
unset from the environment (``WANDB_*``, ``MLFLOW_*``) and refuses bad values with an error that
names the key, the value and the fix. Nothing here imports a tracker.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from primus.redaction import redact_text

WANDB_MODES = ("online", "offline", "disabled", "shared")
RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")


class TrackingConfigError(ValueError):
    """A tracking setting is wrong; the message names the key, the value and the fix."""


@dataclass(frozen=True)
class TensorBoardConfig:
    log_dir: Path
    queue_size: int = 1000  # SummaryWriter(max_queue=...): events held in memory before a write


@dataclass(frozen=True)
class WandbConfig:
    # None: filled from WANDB_PROJECT, WANDB_ENTITY (or WANDB_TEAM), WANDB_RUN_NAME, WANDB_DIR, WANDB_MODE
    project: str | None = None
    entity: str | None = None
    name: str | None = None
    save_dir: Path | None = None
    mode: str | None = None
    init_timeout_s: float = 30.0  # wandb's default of 90 s stalls the writer rank's start-up on a bad network


@dataclass(frozen=True)
class MlflowConfig:
    # None tracking_uri: MLFLOW_TRACKING_URI, else a local sqlite store next to the run directory
    tracking_uri: str | None = None
    registry_uri: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    request_timeout_s: float = 5.0  # per HTTP attempt; MLflow's own retries are turned off, we retry
    upload_logs: bool = False  # files under <run_dir>/logs, after training
    upload_traces: bool = False  # files under <run_dir>/traces, after training


@dataclass(frozen=True)
class ConsoleConfig:
    interval: int = 1  # print steps that are a multiple of this
    rank: int | None = None  # shown in the line prefix when WORLD_SIZE > 1; None: the RANK env var
    stream: TextIO | None = None  # None: sys.stdout at the time of writing


@dataclass(frozen=True)
class OneLoggerConfig:
    project: str = "megatron-lm"
    run_name: str | None = None
    async_mode: bool = False


@dataclass(frozen=True)
class TrackingConfig:
    run_dir: Path
    experiment_name: str = "primus"
    run_name: str | None = None  # None: the run directory's name
    tensorboard: TensorBoardConfig | None = None
    wandb: WandbConfig | None = None
    mlflow: MlflowConfig | None = None
    console: ConsoleConfig | None = None
    one_logger: OneLoggerConfig | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    exit_deadline_s: float = 30.0
    journal_max_bytes: int = 1 << 30
    pending_records: int = 100_000  # records queued in memory between hub ticks before new ones are dropped

    def resolve(self, env: Mapping[str, str] | None = None) -> TrackingConfig:
        """A copy with every None that has a default filled in; raises TrackingConfigError."""
        env = os.environ if env is None else env
        _require(str(self.run_dir).strip() != "", "run_dir", self.run_dir, "give the run its own directory")
        run_dir = Path(self.run_dir).expanduser().absolute()
        _positive("exit_deadline_s", self.exit_deadline_s, "e.g. 30")
        _positive_int("journal_max_bytes", self.journal_max_bytes, "e.g. 1073741824 (1 GiB)")
        _positive_int("pending_records", self.pending_records, "e.g. 100000")
        run_name = self.run_name or run_dir.name
        return replace(
            self,
            run_dir=run_dir,
            run_name=run_name,
            tensorboard=self.tensorboard and _resolve_tensorboard(self.tensorboard),
            wandb=self.wandb and _resolve_wandb(self.wandb, run_dir, run_name, env),
            mlflow=self.mlflow and _resolve_mlflow(self.mlflow, run_dir, self.experiment_name, run_name, env),
            console=self.console and _resolve_console(self.console, env),
        )


def _resolve_tensorboard(cfg: TensorBoardConfig) -> TensorBoardConfig:
    _require(cfg.log_dir is not None and str(cfg.log_dir).strip() != "", "tensorboard.log_dir", cfg.log_dir,
             "set tensorboard_dir to a directory")
    _positive_int("tensorboard.queue_size", cfg.queue_size, "e.g. 1000")
    return replace(cfg, log_dir=Path(cfg.log_dir).expanduser().absolute())


def _resolve_wandb(cfg: WandbConfig, run_dir: Path, run_name: str, env: Mapping[str, str]) -> WandbConfig:
    mode = cfg.mode or env.get("WANDB_MODE") or "online"
    _require(mode in WANDB_MODES, "wandb.mode (or WANDB_MODE)", mode, f"use one of {', '.join(WANDB_MODES)}")
    _positive("wandb.init_timeout_s", cfg.init_timeout_s, "e.g. 30")
    save_dir = cfg.save_dir or env.get("WANDB_DIR") or run_dir
    return replace(
        cfg,
        project=cfg.project or env.get("WANDB_PROJECT") or None,
        entity=cfg.entity or env.get("WANDB_ENTITY") or env.get("WANDB_TEAM") or None,
        name=cfg.name or env.get("WANDB_RUN_NAME") or run_name,
        save_dir=Path(save_dir).expanduser().absolute(),
        mode=mode,
    )


def _resolve_mlflow(cfg: MlflowConfig, run_dir: Path, experiment: str, run_name: str,
                    env: Mapping[str, str]) -> MlflowConfig:
    uri = cfg.tracking_uri or env.get("MLFLOW_TRACKING_URI") or f"sqlite:///{run_dir.parent / 'mlflow.db'}"
    experiment_name = cfg.experiment_name or experiment
    _require(bool(experiment_name), "mlflow.experiment_name", experiment_name, "set mlflow_experiment_name")
    _positive("mlflow.request_timeout_s", cfg.request_timeout_s, "e.g. 5")
    if uri == "databricks" or uri.startswith("databricks://"):
        _check_databricks(uri, experiment_name, env)
    return replace(cfg, tracking_uri=uri, registry_uri=cfg.registry_uri or env.get("MLFLOW_REGISTRY_URI") or None,
                   experiment_name=experiment_name, run_name=cfg.run_name or run_name)


def _check_databricks(uri: str, experiment_name: str, env: Mapping[str, str]) -> None:
    profile_file = Path(env.get("DATABRICKS_CONFIG_FILE") or Path.home() / ".databrickscfg")
    if uri == "databricks" and not profile_file.is_file():
        missing = [k for k in ("DATABRICKS_HOST", "DATABRICKS_TOKEN") if not env.get(k)]
        _require(not missing, "MLFLOW_TRACKING_URI", uri,
                 f"Databricks-hosted MLflow needs {' and '.join(missing)} in the environment "
                 f"(export DATABRICKS_HOST=https://<workspace>.cloud.databricks.com and DATABRICKS_TOKEN=<token>), "
                 f"or a profile in {profile_file}")
    _require(experiment_name.startswith("/"), "mlflow.experiment_name", experiment_name,
             f"Databricks experiment names are workspace paths: use e.g. '/Users/<you>/{experiment_name}'")


def _resolve_console(cfg: ConsoleConfig, env: Mapping[str, str]) -> ConsoleConfig:
    _positive_int("console.interval", cfg.interval, "e.g. 1 (every step) or 10")
    rank = cfg.rank if cfg.rank is not None else int(env.get("RANK", "0") or 0)
    return replace(cfg, rank=rank)


def _require(ok: bool, key: str, value: Any, fix: str) -> None:
    if not ok:
        raise TrackingConfigError(f"{key}={redact_text(repr(value))} is not valid: {fix}")


def _positive(key: str, value: Any, example: str) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    _require(ok, key, value, f"give a positive number of seconds, {example}")


def _positive_int(key: str, value: Any, example: str) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    _require(ok, key, value, f"give a positive integer, {example}")
