"""What a Megatron-Bridge run will track, decided from Bridge's own logger settings (``ConfigContainer.logger``),
which keep their meaning: ``tensorboard_dir`` turns TensorBoard on and names its folder, ``wandb_project`` W&B
(``wandb_entity``, ``wandb_exp_name``, ``wandb_save_dir``), ``mlflow_experiment`` MLflow (``mlflow_run_name``,
``mlflow_tracking_uri``, ``mlflow_tags``: the same as the ``mlflow_tags`` option of the other backends, checked the
same way). Every tracker then runs behind the hub and Bridge writes none itself.

Run directory (journal, run ids, derived tracker folders), by the rule every launcher shares
(primus.config.run_directory): PRIMUS_RUN_DIR; else ``<checkpoint.save>/primus``, so a job restarted from its
checkpoint resumes the same runs; else a fresh timestamped folder under PRIMUS_OUTPUT_ROOT (default
output/megatron_bridge)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.config.environment import RUN_DIR_ENV
from primus.config.run_directory import choose_run_dir, timestamp
from primus.config.schemas.tracking import MAXTEXT, params_for
from primus.tracking import TensorBoardConfig, WandbConfig
from primus.tracking.plan import Destinations, Notices, TrackingPlan, plan_run
from primus.tracking.plugin_sinks import requested_sinks
from primus.tracking.run_layout import WANDB_DIR

BACKEND = "megatron_bridge"
# The catalogue (primus/config/schemas/tracking.py) does not list this backend yet: until it does, Bridge has the
# options every backend has, at their defaults, with MaxText's spelling of the MLflow toggle.
OPTIONS_LIKE = MAXTEXT


def run_directory(checkpoint_save: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    root = Path(environ.get("PRIMUS_OUTPUT_ROOT", f"output/{BACKEND}"))
    return choose_run_dir(explicit=environ.get(RUN_DIR_ENV), checkpoint_dir=checkpoint_save, fresh=root / timestamp())


def plan_tracking(config: Any, *, rank: int, environ: Mapping[str, str] = os.environ) -> TrackingPlan:
    """``config``: Bridge's ConfigContainer (its ``logger`` and ``checkpoint`` sections). Raises TrackingPlanError
    listing every problem."""
    logger = config.logger
    mlflow = bool(logger.mlflow_experiment)
    bridge_values = {
        "enable_mlflow": mlflow,
        "mlflow_experiment_name": logger.mlflow_experiment or None,
        "mlflow_run_name": logger.mlflow_run_name or None,
        "mlflow_tags": logger.mlflow_tags or None,  # checked and recorded as every backend's mlflow_tags
    }
    defaults = {p.name: p.default for p in params_for(OPTIONS_LIKE)}

    def destinations(notices: Notices) -> Destinations | None:
        if not (logger.tensorboard_dir or logger.wandb_project or logger.mlflow_experiment or requested_sinks(environ)):
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
        )

    notices = Notices()
    if getattr(logger, "comet_project", None):
        notices.warn(
            f"logger.comet_project={logger.comet_project!r}: Comet is not one of Primus's trackers, so Bridge writes "
            "it itself (one blocking call per metric, no journal: what a Comet outage loses is lost); to have it "
            "tracked with the rest, install a Comet plugin sink and the comet_ml client (pip install comet_ml) and "
            "name it in PRIMUS_SINKS, or unset logger.comet_project to turn Comet off"
        )
    # Bridge's own URI takes the place of MLFLOW_TRACKING_URI, as it does in Bridge
    uri = {"MLFLOW_TRACKING_URI": logger.mlflow_tracking_uri} if logger.mlflow_tracking_uri else {}
    return plan_run(
        OPTIONS_LIKE,
        lambda name: bridge_values.get(name, defaults[name]),
        destinations,
        notices,
        mlflow=mlflow,
        mlflow_off_by="logger.mlflow_experiment unset",
        environ={**environ, **uri},
    )
