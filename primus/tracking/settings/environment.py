"""Tracker settings the environment holds, checked before training starts: a tracker that cannot start is
refused then, with the variable named and the fix, never dropped once training has begun. (A server that is
down is different: the journal keeps every record until it is back.)

A variable set but empty (``export WANDB_MODE=${WANDB_MODE:-}`` leaves one) is read as unset where the tracker
client reads it so — ``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_TEAM``, ``WANDB_RUN_NAME``, ``WANDB_DIR``,
``WANDB_API_KEY``, ``MLFLOW_TRACKING_URI``, ``MLFLOW_REGISTRY_URI``, ``MLFLOW_EXPERIMENT_NAME``,
``DATABRICKS_HOST``/``DATABRICKS_TOKEN`` (then missing) — and refused where the client refuses it. For W&B the
client's own settings class judges every ``WANDB_*`` variable (``wandb.Settings``: ``WANDB_MODE``,
``WANDB_BASE_URL``, ``WANDB_INIT_TIMEOUT``, ``WANDB_RESUME``, ... refuse an empty value), so this check says
exactly what ``wandb.init`` would say, before training. Unless W&B is already loaded, that class is judged in a
child Python (``python -m primus.tracking.settings.wandb_settings_check``, ~1.5 s at start-up): importing it costs ~2 s and
40 MB, and the training process imports no tracker client (they run in the delivery process).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping

from primus.redaction import redact_text

_INSTALL = {"wandb": "W&B", "mlflow": "MLflow"}
CHECK_TIMEOUT_S = 120


def wandb_environment_problems(env: Mapping[str, str]) -> list[str]:
    """One line per ``WANDB_*`` variable W&B would refuse, or W&B's client not installed."""
    missing = _not_installed("wandb")
    if missing:
        return [missing]
    variables = {name: value for name, value in env.items() if name.startswith("WANDB_")}
    if not variables:
        return []
    if "wandb" in sys.modules:  # already loaded here: judging costs nothing more
        from primus.tracking.settings.wandb_settings_check import problems

        return problems(variables)
    child_env = {k: v for k, v in os.environ.items() if k != "PRIMUS_ACTIVATE"}  # no patches in the checker
    done = subprocess.run(
        [sys.executable, "-m", "primus.tracking.settings.wandb_settings_check"],
        input=json.dumps(variables),
        capture_output=True,
        text=True,
        env=child_env,
        timeout=CHECK_TIMEOUT_S,
    )
    if done.returncode != 0:
        return [
            f"could not check the WANDB_* variables with W&B's settings (exit {done.returncode}): "
            f"{redact_text(done.stderr.strip()[-500:])}"
        ]
    return json.loads(done.stdout)


def mlflow_environment_problems(env: Mapping[str, str]) -> list[str]:
    missing = _not_installed("mlflow")
    return [missing] if missing else []


def _not_installed(package: str) -> str | None:
    if importlib.util.find_spec(package) is not None:
        return None
    return (
        f"{_INSTALL[package]} is on but its client is not installed in this Python ({package} is not "
        f"importable): pip install {package}, or turn {_INSTALL[package]} off"
    )
