"""TorchTitan schema: every field of upstream's config, typed by upstream's own annotations (the generated
table of the torchtitan release installed here, ``torchtitan_table``), plus Primus's MLflow switches in
``metrics:`` and ``model:`` (upstream's ``--module``/``--config``). Which of a section's fields the chosen
config function really has (a subclass may add some), upstream's config manager says when the job starts."""

from __future__ import annotations

from pathlib import Path

from primus.config.schema import Param, Schema
from primus.config.schemas import upstream_tables
from primus.config.schemas.tracking import params_for
from primus.upstreams.torchtitan import TORCHTITAN  # a declaration; imports no upstream

LOG_FREQ = Param("metrics.log_freq", "int", ge=1, help="Steps between metric logs.")
CHECKED_UPSTREAM = [LOG_FREQ]  # upstream's own, checked by the plan on whatever path it came (upstream's command line)
PARAMS = [
    LOG_FREQ,
    Param("metrics.enable_tensorboard", "bool", help="Enable TensorBoard logging."),
    Param(
        "metrics.enable_wandb",
        "bool",
        help="Enable W&B logging. As upstream, from WANDB_PROJECT, WANDB_RUN_NAME, WANDB_TEAM, WANDB_RUN_ID, "
        "WANDB_RUN_NOTES, WANDB_RUN_TAGS (comma-separated), WANDB_RUN_JOB_TYPE, WANDB_RUN_GROUP and "
        "WANDB_RESUME_FROM or WANDB_FORK_FROM (`<run id>?_step=<step>`, on the run's first start; a restart "
        "resumes the run it made; W&B keeps a fork's steps after the branch point only, so fork at the "
        "step before the first one the run logs).",
    ),
    Param("metrics.save_tb_folder", "str", help="TensorBoard output subfolder."),
    Param("metrics.save_for_all_ranks", "bool", help="Write metrics from every rank."),
    Param("metrics.disable_color_printing", "bool", help="No ANSI colours on the console."),
    *params_for("torchtitan"),
    Param(
        "model.module",
        "str",
        primus=True,
        help="torchtitan --module: a model name (llama3) or an importable module with a config_registry.",
    ),
    Param("model.config", "str", primus=True, help="torchtitan --config: the config function, e.g. llama3_8b."),
]


def table() -> Path:
    return upstream_tables.select("torchtitan", upstream_tables.installed(TORCHTITAN))


# 0.3 has a top-level dump_folder; 0.2.2 keeps it in job.dump_folder, and Primus's (what `primus train` derives)
# becomes that unless the experiment sets job.dump_folder itself.
DUMP_FOLDER = Param(
    "dump_folder",
    "str",
    primus=True,
    help="The job's output folder (torchtitan 0.2.2: job.dump_folder, unless the experiment sets it).",
)


def schema() -> Schema:
    upstream = upstream_tables.params(table())
    own = [*PARAMS, *([] if any(p.name == DUMP_FOLDER.name for p in upstream) else [DUMP_FOLDER])]
    return Schema("torchtitan parameter", [*upstream, *own])
