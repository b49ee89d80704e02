"""Which One-Logger this environment has, found without importing it: Megatron's legacy ``one_logger`` (an internal
NVIDIA package, which upstream drives itself), NVIDIA's public nv-one-logger (which Primus feeds from the journal),
or none. ``primus doctor`` and the backends' plans say the same thing from here."""

from __future__ import annotations

import importlib.util

LEGACY, PUBLIC, NONE = "legacy", "public", "none"
EXTRA = "pip install 'primus-tracking[one-logger]'"


def one_logger_present() -> str:
    if _found("one_logger"):
        return LEGACY
    if _found("nv_one_logger") and _found("nv_one_logger.training_telemetry"):
        return PUBLIC
    return NONE


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is not a package, a broken namespace
        return False


def legacy_line(toggle: str) -> str:
    return (
        f"One-Logger ({toggle}): Megatron's legacy one_logger package is installed, so upstream records with it; "
        "Primus's One-Logger (nv-one-logger, from the journal) stays off"
    )


def missing_line(toggle: str, off: str) -> str:
    return (
        f"One-Logger is on ({toggle}) but nv-one-logger is not installed: One-Logger telemetry is off. "
        f"{EXTRA}, or {off} to silence this."
    )
