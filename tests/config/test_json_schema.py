"""`primus config schema --framework NAME`: a JSON Schema an editor checks experiment files with. The shipped
experiments validate against it (read by the same YAML loader), and a mistyped or ill-typed key does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from primus.cli.main import main
from primus.config import yaml12
from primus.config.schemas import FRAMEWORKS

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "configs").glob("*/*.yaml"))


@pytest.fixture(scope="module")
def schemas(tmp_path_factory) -> dict[str, Draft202012Validator]:
    out = tmp_path_factory.mktemp("schemas")
    validators = {}
    for framework in FRAMEWORKS:
        assert main(["config", "schema", "--framework", framework, "-o", str(out / f"{framework}.json")]) == 0
        schema = json.loads((out / f"{framework}.json").read_text())
        Draft202012Validator.check_schema(schema)
        validators[framework] = Draft202012Validator(schema)
    return validators


def _framework(experiment: dict) -> str:
    [module] = experiment["modules"].values()
    return module["framework"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_experiment_validates(path, schemas):
    experiment = yaml12.load_file(path)
    errors = [e.message for e in schemas[_framework(experiment)].iter_errors(experiment)]
    assert errors == []


@pytest.mark.parametrize("framework, overrides, wrong", [
    ("megatron", {"log_intervall": 1}, "'log_intervall' was unexpected"),
    ("megatron", {"lr_decay_style": "cosin"}, "'cosin'"),
    ("torchtitan", {"training": {"mixed_precision_param": "bf16"}}, "'bf16'"),
    ("torchtitan", {"training": {"stepz": 3}}, "'stepz' was unexpected"),
    ("maxtext", {"steps": "ten"}, "'ten'"),
])
def test_a_mistyped_or_ill_typed_key_does_not(framework, overrides, wrong, schemas):
    experiment = {"x-defaults": {"anything": 1},
                  "modules": {"m": {"framework": framework, "config": "pre_trainer.yaml", "overrides": overrides}}}
    errors = [e.message for e in schemas[framework].iter_errors(experiment)]
    assert len(errors) == 1 and wrong in errors[0], errors


def test_an_interpolated_value_is_accepted_where_a_number_goes(schemas):
    experiment = {"modules": {"m": {"framework": "megatron", "config": "pre_trainer.yaml",
                                    "overrides": {"train_iters": "${ITERS:10}"}}}}
    assert list(schemas["megatron"].iter_errors(experiment)) == []
