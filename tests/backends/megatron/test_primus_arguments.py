"""The Primus arguments on upstream's parser agree with the config schema, and an experiment's values
become parser defaults that the command line still overrides."""

import argparse
import json

from primus.backends.megatron.arguments import add_primus_arguments, compose_extra_args_provider
from primus.backends.megatron.schema import PRIMUS_PARAMS


def test_every_primus_config_parameter_is_a_primus_argument():
    parser = add_primus_arguments(argparse.ArgumentParser())
    dests = {a.dest for a in parser._actions} - {"help"}
    assert {p.name for p in PRIMUS_PARAMS} == dests


def test_toggle_spellings():
    parser = add_primus_arguments(argparse.ArgumentParser())
    assert parser.parse_args(["--disable-wandb"]).disable_wandb is True
    assert parser.parse_args(["--disable-wandb", "false"]).disable_wandb is False
    assert parser.parse_args([]).disable_wandb is None
    assert parser.parse_args([]).disable_mlflow is True


def test_experiment_values_are_defaults_the_command_line_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIMUS_CONFIG", "configs/megatron/tiny_cpu.yaml")
    monkeypatch.setenv("PRIMUS_CONFIG_OVERRIDES", json.dumps(["train_iters=7"]))

    def user_provider(parser):
        parser.add_argument("--train-iters", type=int)
        parser.add_argument("--seq-length", type=int)
        parser.add_argument("--num-layers", type=int)
        return parser

    parser = compose_extra_args_provider(user_provider)(argparse.ArgumentParser())
    args = parser.parse_args(["--num-layers", "3"])
    assert (args.train_iters, args.seq_length, args.num_layers) == (7, 128, 3)
    assert args.disable_mlflow is False and args.disable_tensorboard is False
