"""What a Megatron-Bridge run will track, decided on every rank before training from Bridge's own logger settings
(``ConfigContainer.logger``), which keep their meaning: ``tensorboard_dir``, ``wandb_project``,
``mlflow_experiment`` and ``comet_project`` turn their trackers on (offline Comet by COMET_MODE=offline). Bridge's
keys that stand for Primus options (``upstream_keys``: ``mlflow_run_name``, ``mlflow_tags``...) are checked as
those options; the others come from the experiment (PRIMUS_CONFIG), else their defaults. Every tracker then runs
behind the hub and Bridge writes none itself.

Run directory, by the rule every launcher shares (primus.config.run_directory): PRIMUS_RUN_DIR; else
``<checkpoint.save>/primus``, so a restarted job resumes the same runs; else a fresh timestamped folder under
PRIMUS_OUTPUT_ROOT (default output/megatron_bridge)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.config.environment import module_params_from_env
from primus.config.run_directory import choose_run_dir, given_run_dir, timestamp
from primus.config.schemas.tracking import params_for, upstream_keys
from primus.tracking import CometConfig, TensorBoardConfig, WandbConfig
from primus.tracking.journal.files import WANDB_DIR
from primus.tracking.plan import Destinations, Notices, TrackingPlan, exports_to_prometheus, plan_run
from primus.tracking.settings import otlp_env
from primus.tracking.settings.config import OneLoggerConfig
from primus.tracking.sinks.plugins import requested_sinks

BACKEND = "megatron_bridge"
BRIDGE_KEYS = upstream_keys(BACKEND)  # option -> Bridge's own key for it (logger.mlflow_tags)
DEFAULTS = {p.name: p.default for p in params_for(BACKEND)}


def run_directory(checkpoint_save: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    root = Path(environ.get("PRIMUS_OUTPUT_ROOT", f"output/{BACKEND}"))
    explicit = given_run_dir(environ=environ)
    return choose_run_dir(explicit=explicit, checkpoint_dir=checkpoint_save, fresh=root / timestamp())


def experiment_options(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Primus's options the experiment (PRIMUS_CONFIG) gives its Megatron-Bridge module; none without one."""
    params = module_params_from_env(BACKEND, environ) or {}
    return {name: params[name] for name in DEFAULTS if name in params and name not in BRIDGE_KEYS}


def _bridge_value(config: Any, dotted: str) -> Any:
    value = config
    for part in dotted.split("."):
        value = getattr(value, part)
    return value or None  # Bridge's unset is None or empty


def _comet(logger: Any) -> CometConfig | None:
    """Bridge's Comet settings (its API key stays comet_ml's COMET_API_KEY: never a config value)."""
    if not logger.comet_project:
        return None
    return CometConfig(
        project=logger.comet_project,
        workspace=logger.comet_workspace or None,
        name=logger.comet_experiment_name or None,
        tags=tuple(logger.comet_tags or ()),
    )


def one_logger_shape(config: Any, environ: Mapping[str, str]) -> OneLoggerConfig:
    """The run's shape, which One-Logger summarises iterations and checkpoints with (its options: the plan's)."""
    train, model = getattr(config, "train", None), getattr(config, "model", None)  # tests' configs hold less
    return OneLoggerConfig(
        world_size=max(1, int(environ.get("WORLD_SIZE", "1"))),
        global_batch_size=max(1, int(getattr(train, "global_batch_size", None) or 1)),
        micro_batch_size=getattr(train, "micro_batch_size", None),
        seq_length=getattr(model, "seq_length", None),
        train_iterations=getattr(train, "train_iters", None),
        log_every_n_iterations=max(1, int(getattr(config.logger, "log_interval", None) or 1)),
        async_save=bool(getattr(config.checkpoint, "async_save", False)),
    )


def plan_tracking(
    config: Any, *, rank: int, environ: Mapping[str, str] = os.environ, options: Mapping[str, Any] | None = None
) -> TrackingPlan:
    """``config``: Bridge's ConfigContainer (its ``logger`` and ``checkpoint`` sections); ``options``: Primus's
    options by name (default: the experiment's). Raises TrackingPlanError listing every problem."""
    logger = config.logger
    mlflow = bool(logger.mlflow_experiment)
    given = experiment_options(environ) if options is None else options

    def value_of(name: str) -> Any:
        if name in BRIDGE_KEYS:
            return _bridge_value(config, BRIDGE_KEYS[name])
        return given.get(name, DEFAULTS[name])

    def destinations(notices: Notices) -> Destinations | None:
        wanted = (logger.tensorboard_dir, logger.wandb_project, logger.mlflow_experiment, logger.comet_project)
        exported = exports_to_prometheus(value_of, environ) or otlp_env.requested(environ)
        if not (any(wanted) or requested_sinks(environ) or exported):
            return None
        run_dir = run_directory(config.checkpoint.save, environ)
        return Destinations(
            run_dir=run_dir,
            run_name=logger.wandb_exp_name or run_dir.name,
            tensorboard=TensorBoardConfig(Path(logger.tensorboard_dir), queue_size=logger.tensorboard_queue_size)
            if logger.tensorboard_dir
            else None,
            wandb=WandbConfig(
                project=logger.wandb_project,
                entity=logger.wandb_entity,
                name=logger.wandb_exp_name or None,
                save_dir=Path(logger.wandb_save_dir) if logger.wandb_save_dir else run_dir / WANDB_DIR,
            )
            if logger.wandb_project
            else None,
            rank=rank,
            comet=_comet(logger),
            one_logger=one_logger_shape(config, environ),
        )

    notices = Notices()
    if logger.comet_project and importlib.util.find_spec("comet_ml") is None:
        notices.error(
            f"logger.comet_project={logger.comet_project!r}: Comet is tracked by Primus's Comet sink, which needs "
            "the comet_ml client, and it is not installed in this environment: pip install comet_ml, or unset "
            "logger.comet_project to turn Comet off"
        )
    if logger.comet_project and getattr(logger, "comet_api_key", None) and "COMET_API_KEY" not in environ:
        notices.warn(  # the key itself stays out of every message, setting and process argument
            "logger.comet_api_key is not passed on: Primus's Comet sink reads the key as comet_ml does; export "
            "COMET_API_KEY (or put it in ~/.comet.config) instead, or COMET_MODE=offline to archive the run"
        )
    # Bridge's own URI takes the place of MLFLOW_TRACKING_URI, as it does in Bridge
    uri = {"MLFLOW_TRACKING_URI": logger.mlflow_tracking_uri} if logger.mlflow_tracking_uri else {}
    return plan_run(
        BACKEND,
        value_of,
        destinations,
        notices,
        mlflow=mlflow,
        mlflow_off_by="logger.mlflow_experiment unset",
        flag=lambda name: BRIDGE_KEYS.get(name, name),  # the key the user wrote
        environ={**environ, **uri},
    )
