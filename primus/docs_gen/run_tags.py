"""docs/metrics.md's section on the tags every run gets: where it ran (from the launchers' variables, in the order
they are read), its accelerators and layout, and the user's own labels with their variables."""

from __future__ import annotations

from primus.config.schemas.user_tags import MLFLOW_NOTE, RESERVED_PREFIX
from primus.docs_gen.markdown import code, fill
from primus.tracking.journal.records import RANK_TAG
from primus.tracking.tags.launch import CONTAINER_VARIABLES, COPIED
from primus.tracking.tags.parallel import DEGREES
from primus.tracking.tags.run_labels import VARIABLES
from primus.tracking.trackers.tensorboard import TAGS_TAG


def run_tags_section() -> str:
    return fill(
        "run-tags.md",
        tags_tag=code(TAGS_TAG),
        copied="; ".join(f"{code(tag)} from {' or '.join(code(v) for v in names)}" for tag, names in COPIED.items()),
        container_variables=", ".join(code(v) for v in CONTAINER_VARIABLES),
        degrees=", ".join(code(d) for d in DEGREES),
        rank_tag=code(RANK_TAG),
        labels=", ".join(f"{code(option)} ({code(variable)})" for option, variable in VARIABLES.items()),
        mlflow_note=code(MLFLOW_NOTE),
        reserved_prefix=code(RESERVED_PREFIX),
    )
