"""Run params and tags as every tracker receives them: flattened, redacted, and within MLflow's limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primus.redaction import redact_mapping, redact_value

MLFLOW_MAX_PARAM_VALUE = 6000
MLFLOW_MAX_TAG_VALUE = 8000


def flat_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Redacted params with nested mappings flattened to dotted keys (``optimizer.lr``); values are
    kept as numbers, bools or None where they are, anything else becomes its string."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = value if isinstance(value, (int, float, bool, str)) or value is None else str(value)

    walk("", redact_mapping(params))
    return out


def redacted_tags(tags: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(redact_value(str(k), str(v))) for k, v in tags.items()}


def clip(value: Any, limit: int) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
