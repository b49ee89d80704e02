"""The library calls Megatron-Bridge's ``scripts/training/run_recipe.py`` (tag v0.6.0, run unmodified against the
0.6.2 wheel in ../shared/research/bridge-cpu) makes for ``--recipe NAME --dataset PRESET KEY=VALUE...``, in its order:
``recipe_runner.load_recipe`` (the recipe function of ``megatron.bridge.recipes``), ``_apply_dataset``
(``build_dataset_config``), ``apply_cli_overrides`` (``process_config_with_overrides``),
``sync_model_dataset_sequence_length``, then ``run_config``: ``pretrain(config=..., forward_step_func=...)`` with the
``gpt_step`` forward step, and the process group destroyed. run_recipe.py is not in the wheel and a test reaches the
package index only, so this script stands in for it. Nothing of Primus in it: under ``primus-run`` the patches do the
rest."""

import argparse

import torch.distributed
from megatron.bridge import recipes
from megatron.bridge.recipes.utils.dataset_utils import build_dataset_config
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides

parser = argparse.ArgumentParser()
parser.add_argument("--recipe", required=True)
parser.add_argument("--dataset")
args, cli_overrides = parser.parse_known_args()

config = getattr(recipes, args.recipe)()
if args.dataset:
    config.dataset = build_dataset_config(config, args.dataset)
config = process_config_with_overrides(config, cli_overrides=cli_overrides or None)
if getattr(config.dataset, "seq_length", None) is not None:
    config.model.seq_length = config.dataset.seq_length

# run_config resolves the training function at call time, as here
from megatron.bridge.training.pretrain import pretrain  # noqa: E402

pretrain(config=config, forward_step_func=forward_step)
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
