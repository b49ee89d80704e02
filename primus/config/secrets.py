"""Refuse credentials written into config: a config is dumped, uploaded as run params and printed,
so a secret in it leaks. The fix is always the same: delete it and export the environment
variable that the tracker client reads itself."""

from __future__ import annotations

import re
from typing import Any

from primus.config.errors import ALREADY_REPORTED
from primus.config.schemas import upstream_parameter_names
from primus.config.tree import map_strings
from primus.redaction import is_secret_key, looks_like_secret

# Which environment variable holds the credential a key or value is about; first match wins.
_ENV_BY_VALUE = ((re.compile(r"\bhf_"), "HF_TOKEN"), (re.compile(r"\bdapi[0-9a-f]{32}"), "DATABRICKS_TOKEN"))
_ENV_BY_KEY_WORD = {
    "wandb": "WANDB_API_KEY",
    "databricks": "DATABRICKS_TOKEN",
    "mlflow": "MLFLOW_TRACKING_PASSWORD",
    "hf": "HF_TOKEN",
    "huggingface": "HF_TOKEN",
}


def env_var_for(key: str, value: str) -> str:
    """The environment variable a user should set instead of writing ``key: value`` in YAML."""
    for pattern, env in _ENV_BY_VALUE:
        if pattern.search(value):
            return env
    for word in re.split(r"[^a-z0-9]+", key.lower()):
        if word in _ENV_BY_KEY_WORD:
            return _ENV_BY_KEY_WORD[word]
    return re.sub(r"[^A-Z0-9]+", "_", key.upper()).strip("_")


def is_secret(key: str, value: Any) -> bool:
    """A non-empty string under a credential name (upstream parameters excepted), or any string
    shaped like a credential."""
    if not isinstance(value, str) or not value:
        return False
    return looks_like_secret(value) or (is_secret_key(key) and key not in upstream_parameter_names())


def refusal(where: str, key: str, value: str, how: str = "written in config") -> str:
    return (
        f"{where}: a credential is {how}; it would be copied into every config dump, param upload"
        f" and log. Delete it and export {env_var_for(key, value)} instead"
    )


def refuse_secrets(tree: Any, source: str) -> tuple[Any, list[str]]:
    """``tree`` with each literal credential replaced by ALREADY_REPORTED, and one problem per
    credential. Strings with a ``${VAR}`` reference are left to interpolation, which checks what
    they expand to."""
    problems: list[str] = []

    def check(path: str, key: str, value: str) -> Any:
        if "${" in value or not is_secret(key, value):
            return value
        problems.append(refusal(f"{source}: {path}", key, value))
        return ALREADY_REPORTED

    return map_strings(tree, check), problems
