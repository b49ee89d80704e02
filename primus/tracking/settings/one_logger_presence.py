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


def what_a_run_records(present: str) -> str:
    """``primus doctor``'s line: which One-Logger, and what a run with enable_one_logger (the default) records."""
    if present == LEGACY:
        return "legacy one_logger: Megatron's own One-Logger records (upstream's path); Primus's stays off"
    if present == PUBLIC:
        version = _version("nv-one-logger-training-telemetry")
        return (
            f"public nv-one-logger {version}: a tracked run writes <run_dir>/one_logger/attempt-<n>.jsonl "
            "(and OTLP traces when OTEL_EXPORTER_OTLP_ENDPOINT is set)"
        )
    return f"none: nothing is recorded ({EXTRA})"


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(version unknown)"
