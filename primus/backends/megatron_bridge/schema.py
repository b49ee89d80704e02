"""Megatron-Bridge schema: a recipe (a function of ``megatron.bridge.recipes`` that builds a ConfigContainer) and
overrides of that ConfigContainer's fields, typed by Bridge's own annotations (the generated table,
``megatron_bridge_table``: Bridge lives in its own environment, so the table is what the launching one reads), plus
Primus's options Bridge's LoggerConfig has no key for. Which of the table's fields the chosen recipe's config has
(its model provider's), Bridge's override parser says when the job starts, before training."""

from __future__ import annotations

from pathlib import Path

from primus.config.schema import Param, Schema
from primus.config.schemas import upstream_tables
from primus.config.schemas.tracking import params_for, upstream_keys
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE  # a declaration; imports no upstream

BACKEND = "megatron_bridge"  # the backend this schema is (primus/backends/megatron_bridge/backend.py)

RECIPE = Param(
    "recipe",
    "str",
    primus=True,
    help="The recipe: a function of megatron.bridge.recipes returning a ConfigContainer (run_recipe.py's "
    "--recipe), e.g. vanilla_gpt_pretrain_config; or module:function for your own.",
)
DATASET_PRESET = Param(
    "dataset_preset",
    "str",
    nullable=True,
    primus=True,
    help="run_recipe.py's --dataset: a preset of Bridge's (mock, megatron-indexed, squad, ...) put in place of "
    "the recipe's dataset before the dataset.* fields apply; unset: the recipe's own.",
)
FORWARD_STEP = Param(
    "forward_step",
    "str",
    default="megatron.bridge.training.gpt_step:forward_step",
    primus=True,
    help="The forward step pretrain() is given, as module:function.",
)
PARAMS = [
    RECIPE,
    DATASET_PRESET,
    FORWARD_STEP,
    *(p for p in params_for(BACKEND) if p.name not in upstream_keys(BACKEND)),
]


# Bridge's own credential field: in a config file it is refused like any credential (comet_ml reads COMET_API_KEY)
CREDENTIALS = frozenset({"logger.comet_api_key"})


def table() -> Path:
    return upstream_tables.select(BACKEND, upstream_tables.installed(MEGATRON_BRIDGE))


def schema() -> Schema:
    upstream = [p for p in upstream_tables.params(table()) if p.name not in CREDENTIALS]
    return Schema("Megatron-Bridge config field", [*upstream, *PARAMS])
