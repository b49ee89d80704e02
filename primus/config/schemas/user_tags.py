"""The user's own tags and notes (``mlflow_tags``, ``mlflow_description``, ``wandb_tags``, ``wandb_notes``): the
values every spelling can give, read into one shape, and what is wrong with one.

A mapping is a YAML mapping, or text ``key=value,key=value`` (a command-line flag, MaxText's ``key=value``, the
``PRIMUS_MLFLOW_TAGS`` variable); a list is a YAML list or comma-separated text (``WANDB_TAGS``, as W&B reads it).
Scalars become strings. Refused, before training: a key in the ``primus.`` namespace (the tags Primus sets about
the run, which a user's tag would silently replace), ``mlflow.note.content`` (that is ``mlflow_description``), a
credential (by its key's name or its value's shape, as in any config value), and a W&B tag longer than W&B takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from primus.redaction import is_secret_key, looks_like_secret

RESERVED_PREFIX = "primus."  # the system tags' namespace (primus.version.*, primus.slurm.*, ...)
MLFLOW_NOTE = "mlflow.note.content"  # MLflow shows this tag as the run's description
WANDB_MAX_TAG = 64  # wandb.init refuses a longer tag
_SCALARS = (str, int, float, bool)


def as_mapping(value: Any) -> dict[str, str]:
    """``value`` as tags; raises ValueError saying what is wrong (never quoting a value)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        pairs = [item.partition("=") for item in (i.strip() for i in value.split(",")) if item]
        missing = [key for key, sep, _ in pairs if not sep]
        if missing:
            raise ValueError(f"{missing[0]!r} has no '=': write key=value,key=value")
        value = {key.strip(): text.strip() for key, _, text in pairs}
    if not isinstance(value, Mapping):
        raise ValueError(f"got {type(value).__name__}: give a mapping (key: value) or key=value,key=value")
    tags = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"key {key!r} is not a name: give each tag a non-empty text key")
        if not isinstance(item, _SCALARS):
            raise ValueError(f"{key!r} holds a {type(item).__name__}: a tag's value is one text, number or bool")
        tags[key.strip()] = str(item).lower() if isinstance(item, bool) else str(item)
    for key, text in tags.items():
        _check_key(key)
        _check_secret(key, text)
    return tags


def as_list(value: Any) -> tuple[str, ...]:
    """``value`` as W&B tags; raises ValueError."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, _SCALARS) for i in items):
        raise ValueError("give a list of texts, or text,text")
    tags = tuple(t for t in (str(i).strip() for i in items) if t)
    for tag in tags:
        if len(tag) > WANDB_MAX_TAG:
            raise ValueError(f"tag {tag[:20]!r}... has {len(tag)} characters: W&B takes at most {WANDB_MAX_TAG}")
        _check_secret("tag", tag)
    return tags


def text_problem(key: str, value: Any) -> str | None:
    """What is wrong with a free text (a description, notes): only a credential in it."""
    try:
        _check_secret(key, value if isinstance(value, str) else "")
    except ValueError as e:
        return str(e)
    return None


def _check_key(key: str) -> None:
    if key.startswith(RESERVED_PREFIX):
        raise ValueError(
            f"key {key!r} is in the {RESERVED_PREFIX}* namespace Primus sets (backend, versions, where the run ran): "
            "rename it, e.g. without the prefix"
        )
    if key == MLFLOW_NOTE:
        raise ValueError(f"key {key!r} is the run's description: set mlflow_description instead")


def _check_secret(key: str, text: str) -> None:
    if text and (looks_like_secret(text) or is_secret_key(key)):
        raise ValueError(
            f"{key!r} holds a credential; tags are shown to everyone who can see the run. Remove it, and give the "
            "credential to the tracker through its own environment variable"
        )
