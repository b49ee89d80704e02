"""Primus's own console logger: ``primus`` and its children print to stderr at INFO (level from
PRIMUS_LOG_LEVEL) through one handler that redacts secrets, whatever the host program configured."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from primus.redaction import redact_text

LEVEL_ENV = "PRIMUS_LOG_LEVEL"
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def get_logger(name: str) -> logging.Logger:
    root = logging.getLogger("primus")
    if not getattr(root, "_primus_configured", False):
        handler = logging.StreamHandler()
        handler.setFormatter(RedactingFormatter("[primus] %(levelname)s %(message)s"))
        root.addHandler(handler)
        root.setLevel(_level_from_env())
        root.propagate = False
        root._primus_configured = True  # type: ignore[attr-defined]  # a marker on the process-wide logger
    return logging.getLogger(name if name.startswith("primus") else f"primus.{name}")


def _level_from_env() -> str:
    """PRIMUS_LOG_LEVEL, INFO when unset or empty; another word is refused with the fix."""
    level = (os.environ.get(LEVEL_ENV) or "INFO").upper()
    if level not in _LEVELS:
        raise ValueError(
            f"{LEVEL_ENV}={os.environ[LEVEL_ENV]!r} is not a log level: use one of {', '.join(_LEVELS)}, or unset it"
        )
    return level


def set_level(level: int | str) -> None:
    """Apply the program's own log level (Megatron's --logging-level) to Primus's lines too."""
    get_logger("primus").setLevel(level)


def outside_except(fn: Callable[[], Any]) -> Exception | None:
    """Run ``fn`` and return its exception instead of raising it, so the caller logs outside the
    ``except`` block: a log handler that fails prints the exception being handled along with its own
    error, unredacted (an MLflow error carries the tracking URI, password included)."""
    try:
        fn()
    except Exception as e:
        return e
    return None
