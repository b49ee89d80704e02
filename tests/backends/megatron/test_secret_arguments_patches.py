"""Megatron arguments holding credentials, on upstream's real ``_print_args`` and ``validate_args`` (patched
on a fresh registry, undone afterwards): the printed copy is masked and the arguments are not; a tracker
name holding a credential is refused before upstream validates anything. (On a real training, with every
tracker read back: tests/reliability/test_secret_leaks.py.)"""

from __future__ import annotations

import argparse
import importlib
import secrets

import pytest

from primus.backends.megatron.patches.secret_arguments_patches import TRACKER_NAME_ARGUMENTS, secret_tracker_names
from primus.patches import REGISTRY, PatchContext, PatchRegistry
from primus.tracking.plan import TrackingPlanError

HF_TOKEN = f"hf_{secrets.token_hex(17)}"
PASSWORD = secrets.token_hex(10)


@pytest.fixture
def patched():
    """megatron.training.arguments and yaml_arguments with this module's patches active."""
    registry = PatchRegistry()
    for patch in REGISTRY.patches():
        if patch.install.__module__.endswith("secret_arguments_patches"):
            registry.register(patch)
    registry.activate(PatchContext(platform=lambda: "cpu"))
    modules = [importlib.import_module(f"megatron.training.{name}") for name in ("arguments", "yaml_arguments")]
    yield registry, modules
    registry.deactivate()


def namespace(**values) -> argparse.Namespace:
    defaults = dict(wandb_exp_name=f"nightly-{HF_TOKEN}", data_path=[f"https://alice:{PASSWORD}@data.example/c"],
                    num_layers=2, tokenizer_type="NullTokenizer", rank=0)
    return argparse.Namespace(**{**defaults, **values})


def test_upstream_prints_the_arguments_masked_and_keeps_them_unchanged(patched, capsys):
    _, modules = patched
    for module in modules:
        args = namespace()
        module._print_args("arguments", args)
        printed = capsys.readouterr().out
        assert HF_TOKEN not in printed and PASSWORD not in printed, module.__name__
        assert "wandb_exp_name" in printed and "nightly-***" in printed
        assert "https://alice:***@data.example/c" in printed
        assert "tokenizer_type" in printed and "NullTokenizer" in printed and "num_layers" in printed
        assert args == namespace()  # what training uses is untouched


def test_undone_the_patch_leaves_upstream_printing_everything(patched, capsys):
    registry, [arguments, _] = patched
    registry.deactivate()
    arguments._print_args("arguments", namespace())
    assert HF_TOKEN in capsys.readouterr().out


def test_a_tracker_name_holding_a_credential_is_refused_before_upstream_validates(patched, monkeypatch):
    _, [arguments, _] = patched
    monkeypatch.setenv("PRIMUS_TEST_SERVICE_TOKEN", "s3cr3t-value-0042")
    args = namespace(mlflow_run_name="run-s3cr3t-value-0042", mlflow_experiment_name="team-a", wandb_project="p",
                     wandb_entity=None)
    with pytest.raises(TrackingPlanError) as refused:
        arguments.validate_args(args)  # upstream's own would fail on this bare namespace: ours must come first
    message = str(refused.value)
    assert "wandb_exp_name='nightly-***' holds what looks like a credential" in message
    assert "mlflow_run_name='run-***' holds what looks like a credential" in message  # an environment secret's value
    assert "--wandb-exp-name" in message and HF_TOKEN not in message and "s3cr3t-value-0042" not in message


def test_ordinary_names_pass():
    args = argparse.Namespace(**dict.fromkeys(TRACKER_NAME_ARGUMENTS, None))
    args.wandb_exp_name, args.mlflow_run_name, args.wandb_project = "llama3-8b_lr3e-4_token-budget", "run 7", "pretrain"
    assert secret_tracker_names(args) == []
