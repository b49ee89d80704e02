"""The user's own labels for a run, from the options (``mlflow_tags``, ``mlflow_description``, ``wandb_tags``,
``wandb_notes``), else from the environment:

* ``PRIMUS_MLFLOW_TAGS`` (``key=value,key=value``) and ``PRIMUS_MLFLOW_DESCRIPTION``: MLflow's client has no
  variables for either;
* ``WANDB_TAGS`` (comma-separated) and ``WANDB_NOTES``, W&B's own; a backend whose upstream reads other variables
  (TorchTitan's ``WANDB_RUN_TAGS``) gives those through its W&B settings, used when neither is set.

An option given wins over its variable, whole (a mapping is not merged). The MLflow tags and the description (as
``mlflow.note.content``) join the run's tags, which every tracker receives; the system tags win over a user's tag
of the same key (only ``mlflow.source.git.commit`` can collide: keys under ``primus.`` are refused), with a warning
(``meta.RunMeta``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from primus.config.schemas.tracking import value_problem
from primus.config.schemas.user_tags import MLFLOW_NOTE, as_list, as_mapping

VARIABLES = {
    "mlflow_tags": "PRIMUS_MLFLOW_TAGS",
    "mlflow_description": "PRIMUS_MLFLOW_DESCRIPTION",
    "wandb_tags": "WANDB_TAGS",
    "wandb_notes": "WANDB_NOTES",
}


@dataclass(frozen=True)
class RunLabels:
    tags: Mapping[str, str]  # the MLflow tags, with the description as mlflow.note.content
    wandb_tags: tuple[str, ...] | None  # None: neither option nor variable (the backend's W&B settings decide)
    wandb_notes: str | None


def run_labels(options: Mapping[str, Any], environ: Mapping[str, str], error: Callable[[str], None]) -> RunLabels:
    """The labels ``options`` (by bare name) and ``environ`` give; a bad variable is one ``error`` each."""
    chosen: dict[str, Any] = {}
    for name, variable in VARIABLES.items():
        value = options.get(name)
        if value is None and environ.get(variable):
            value = environ[variable]
            wrong = value_problem(name, value)
            if wrong is not None:
                error(f"{variable} (read for {name}) is invalid: {wrong}")
                value = None
        chosen[name] = value
    tags = as_mapping(chosen["mlflow_tags"])
    if chosen["mlflow_description"]:
        tags[MLFLOW_NOTE] = chosen["mlflow_description"]
    wandb_tags = as_list(chosen["wandb_tags"]) if chosen["wandb_tags"] is not None else None
    return RunLabels(tags, wandb_tags, chosen["wandb_notes"] or None)
