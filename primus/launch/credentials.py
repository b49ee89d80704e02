"""Credentials an enabled tracker needs, checked before anything is launched: a job that would train for
hours and then fail to log in (or quietly not log) is stopped here, with the variable to set named.

W&B online needs WANDB_API_KEY or a `wandb login` entry in ~/.netrc; Databricks-hosted MLflow needs
DATABRICKS_HOST and DATABRICKS_TOKEN (or a profile in ~/.databrickscfg). For a Slurm job or a container
the variable must also be on the passthrough allow-list, and a container sees neither ~/.netrc nor
~/.databrickscfg: there only the environment counts.

Every message goes through the redactor on its way to the console, which hides the value of any
``*_KEY=``/``*_TOKEN=`` it sees: a hint names the variable and says what goes in it, never ``NAME=<placeholder>``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from primus.config import ModuleConfig
from primus.tracking.settings.credentials import WANDB_OFFLINE_MODES, has_wandb_credentials
from primus.tracking.settings.environment import mlflow_environment_problems, wandb_environment_problems
from primus.upstreams.backends import backend_named


def enabled_trackers(module: ModuleConfig) -> tuple[bool, bool]:
    """(W&B on, MLflow on) as the module's backend will decide them."""
    return backend_named(module.framework).launch_rules().trackers_on(module)


def missing_credentials(
    module: ModuleConfig, environ: Mapping[str, str], passes: Callable[[str], bool], home_visible: bool
) -> list[str]:
    """One message per missing credential. ``passes(name)``: the job receives the variable;
    ``home_visible``: the job reads this user's ~/.netrc and ~/.databrickscfg (not in a container)."""
    wandb_on, mlflow_on = enabled_trackers(module)
    problems = []
    if wandb_on:
        problems += _wandb(environ, passes, home_visible)
    if mlflow_on:
        problems += _databricks(environ, passes, home_visible)
    return problems


def environment_problems(module: ModuleConfig, environ: Mapping[str, str]) -> list[str]:
    """What the enabled trackers' clients would refuse in ``environ`` (an empty WANDB_MODE), for a job that runs
    with this environment (this machine's launchers)."""
    wandb_on, mlflow_on = enabled_trackers(module)
    return [
        *(wandb_environment_problems(environ) if wandb_on else []),
        *(mlflow_environment_problems(environ) if mlflow_on else []),
    ]


def _given(name: str, environ: Mapping[str, str], passes: Callable[[str], bool]) -> str | None:
    """None when the job gets ``name``; else why not."""
    if not environ.get(name):
        return f"{name} is not set"
    if not passes(name):
        return f"{name} is set but the passthrough allow-list excludes it (see launch.passthrough)"
    return None


def _wandb(environ: Mapping[str, str], passes: Callable[[str], bool], home_visible: bool) -> list[str]:
    mode = (environ.get("WANDB_MODE") or "online").lower()
    if mode in WANDB_OFFLINE_MODES and passes("WANDB_MODE"):
        return []
    if mode in WANDB_OFFLINE_MODES:
        return [
            f"WANDB_MODE={mode} is set but the passthrough allow-list excludes it, so the job would run W&B "
            f"online: allow WANDB_MODE in launch.passthrough.names"
        ]
    why = _given("WANDB_API_KEY", environ, passes)
    # online and no key here, so has_wandb_credentials() is this user's `wandb login` entry in ~/.netrc
    if why is None or (home_visible and not environ.get("WANDB_API_KEY") and has_wandb_credentials()):
        return []
    login = "" if home_visible else " (a container does not see ~/.netrc)"
    return [
        f"W&B is enabled and online (WANDB_MODE={mode}) but {why} and there is no `wandb login`{login}: "
        f"set WANDB_API_KEY to your API key (https://wandb.ai/authorize), or set WANDB_MODE=offline "
        f"and upload later with `wandb sync`"
    ]


def _databricks(environ: Mapping[str, str], passes: Callable[[str], bool], home_visible: bool) -> list[str]:
    if environ.get("MLFLOW_TRACKING_URI") != "databricks":
        return []  # a databricks://<profile> URI names its profile; other servers need no credential
    profile = Path(environ.get("DATABRICKS_CONFIG_FILE") or Path.home() / ".databrickscfg")
    if home_visible and profile.is_file():
        return []
    whys = [why for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN") if (why := _given(name, environ, passes))]
    if not whys:
        return []
    where = f", or a profile in {profile}" if home_visible else " (a container does not see ~/.databrickscfg)"
    return [
        f"MLflow is enabled with MLFLOW_TRACKING_URI=databricks but {' and '.join(whys)}: export "
        f"DATABRICKS_HOST=https://<workspace>.cloud.databricks.com and set DATABRICKS_TOKEN to a personal "
        f"access token{where}"
    ]
