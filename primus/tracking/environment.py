"""Tracker settings the environment holds, checked before training starts: a tracker that cannot start is
refused then, with the variable named and the fix, never dropped once training has begun. (A server that is
down is different: the journal keeps every record until it is back.)

A variable set but empty (``export WANDB_MODE=${WANDB_MODE:-}`` leaves one) is read as unset where the tracker
client reads it so — ``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_TEAM``, ``WANDB_RUN_NAME``, ``WANDB_DIR``,
``WANDB_API_KEY``, ``MLFLOW_TRACKING_URI``, ``MLFLOW_REGISTRY_URI``, ``MLFLOW_EXPERIMENT_NAME``,
``DATABRICKS_HOST``/``DATABRICKS_TOKEN`` (then missing) — and refused where the client refuses it. For W&B the
client's own settings class judges every ``WANDB_*`` variable (``wandb.Settings``: ``WANDB_MODE``,
``WANDB_BASE_URL``, ``WANDB_INIT_TIMEOUT``, ``WANDB_RESUME``, ... refuse an empty value), so this check says
exactly what ``wandb.init`` would say, before training. Only this check imports a tracker's code, and only when
that tracker is on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from primus.redaction import redact_text

_INSTALL = {"wandb": "W&B", "mlflow": "MLflow"}


def wandb_environment_problems(env: Mapping[str, str]) -> list[str]:
    """One line per ``WANDB_*`` variable W&B would refuse, or W&B's client not installed."""
    missing = _not_installed("wandb")
    if missing:
        return [missing]
    from pydantic import ValidationError
    from wandb.sdk.wandb_settings import Settings

    problems = []
    for name, value in sorted(env.items()):
        if not name.startswith("WANDB_"):
            continue
        try:
            Settings().update_from_env_vars({name: value})
        except ValidationError as e:
            reason = e.errors(include_url=False)[0]["msg"]
            if value == "":
                fix = f"it is set but empty, which W&B refuses: unset it (unset {name}) or give it a value"
            else:
                fix = f"give a value W&B accepts, or unset it (unset {name})"
            problems.append(f"{name}={redact_text(repr(value))} is not valid for W&B ({reason}): {fix}")
    return problems


def mlflow_environment_problems(env: Mapping[str, str]) -> list[str]:
    missing = _not_installed("mlflow")
    return [missing] if missing else []


def _not_installed(package: str) -> str | None:
    if importlib.util.find_spec(package) is not None:
        return None
    return (f"{_INSTALL[package]} is on but its client is not installed in this Python ({package} is not "
            f"importable): pip install {package}, or turn {_INSTALL[package]} off")
