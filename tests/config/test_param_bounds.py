"""Bounds on numeric parameters (``ge``/``gt``/``le``): out-of-range values from YAML, command-line
overrides and the launched process's PRIMUS_CONFIG are refused with the config, every one listed."""

import json
import math

import pytest

from primus.config import ConfigError, load_experiment, yaml12
from primus.config.environment import module_params_from_env
from primus.config.schema import Param, Schema
from primus.config.schemas import FRAMEWORKS, schema_for
from primus.backends.megatron.schema import UPSTREAM_BOUNDS
from primus.backends.megatron.upstream_table import installed_table_path
from primus.config.yaml12 import Unparsed

SCHEMA = Schema(
    "test parameter",
    [
        Param("interval", "int", ge=1),
        Param("timeout", "float", gt=0),
        Param("dropout", "float", ge=0, le=1),
        Param("window", "int", ge=1, nullable=True),
        Param("sizes", "int", ge=1, is_list=True),
    ],
)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("interval", 0, "m: interval = 0: expected int >= 1, out of range"),
        ("interval", Unparsed("-3"), "m: interval = '-3': expected int >= 1, out of range"),
        ("timeout", 0, "m: timeout = 0: expected float > 0, out of range"),
        ("timeout", -0.5, "m: timeout = -0.5: expected float > 0, out of range"),
        ("timeout", math.nan, "m: timeout = nan: expected float > 0, out of range"),
        ("dropout", 1.5, "m: dropout = 1.5: expected float >= 0 and <= 1, out of range"),
        ("dropout", -0.1, "m: dropout = -0.1: expected float >= 0 and <= 1, out of range"),
        ("window", 0, "m: window = 0: expected int >= 1 or null, out of range"),
        ("sizes", [4, 0], "m: sizes = [4, 0]: expected a list of int >= 1, out of range"),
        ("interval", Unparsed("ten"), "m: interval = 'ten': expected int >= 1, got str"),
    ],
)
def test_out_of_range_values_name_key_value_and_range(key, value, message):
    _, problems = SCHEMA.validate({key: value}, "m")
    assert problems == [message]


def test_values_on_the_bounds_and_null_where_allowed_pass():
    tree = {"interval": 1, "timeout": 1e-3, "dropout": Unparsed("1"), "window": None, "sizes": [1, 2]}
    typed, problems = SCHEMA.validate(tree, "m")
    assert problems == []
    assert typed == {"interval": 1, "timeout": 1e-3, "dropout": 1.0, "window": None, "sizes": [1, 2]}


def test_bounds_on_a_parameter_that_is_not_a_number_are_a_declaration_error():
    with pytest.raises(TypeError, match="flag: bounds need an int or float parameter, not bool"):
        Param("flag", "bool", ge=1)


def test_every_bounded_upstream_argument_is_a_number_in_the_table():
    """A name upstream renamed or dropped would otherwise lose its bounds silently."""
    table = yaml12.load_file(installed_table_path())["args"]
    types = {name: table.get(name, {}).get("type", "missing") for name in UPSTREAM_BOUNDS}
    assert {name: kind for name, kind in types.items() if kind not in ("int", "float")} == {}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_default_and_preset_value_is_within_its_bounds(tmp_path, framework):
    schema = schema_for(framework)
    defaults = {name: p.default for name, p in schema.params.items() if p.default is not None}
    for name, default in defaults.items():
        assert schema.params[name].coerce(default)[1] is None, (name, default)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"modules: {{m: {{framework: {framework}, config: pre_trainer.yaml}}}}\n")
    load_experiment(experiment, environ={})  # raises on any preset value out of range


def _experiment(tmp_path, framework: str, overrides: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(f"modules:\n  pre_trainer:\n    framework: {framework}\n    config: pre_trainer.yaml\n"
                    f"    overrides: {overrides}\n")
    return str(path)


def test_megatron_range_problems_from_yaml_and_command_line_are_listed_together(tmp_path):
    path = _experiment(tmp_path, "megatron", "{log_interval: 0, tensorboard_queue_size: 0, hidden_dropout: 2.0}")
    with pytest.raises(ConfigError) as error:
        load_experiment(path, ["tensorboard_log_interval=-1", "primus_exit_deadline=0"], environ={})
    assert error.value.problems == [
        "modules.pre_trainer: log_interval = 0: expected int >= 1, out of range",
        "modules.pre_trainer: tensorboard_log_interval = '-1': expected int >= 1, out of range",
        "modules.pre_trainer: tensorboard_queue_size = 0: expected int >= 1, out of range",
        "modules.pre_trainer: primus_exit_deadline = '0': expected float > 0 and <= 86400, out of range",
        "modules.pre_trainer: hidden_dropout = 2.0: expected float >= 0 and <= 1, out of range",
    ]


@pytest.mark.parametrize("framework, override, message", [
    ("torchtitan", "metrics.log_freq=0", "metrics.log_freq = '0': expected int >= 1, out of range"),
    ("maxtext", "log_period=-1", "log_period = '-1': expected int >= 1, out of range"),
])
def test_torchtitan_and_maxtext_logging_cadence_is_bounded(tmp_path, framework, override, message):
    with pytest.raises(ConfigError) as error:
        load_experiment(_experiment(tmp_path, framework, "{}"), [override], environ={})
    assert error.value.problems == [f"modules.pre_trainer: {message}"]


def test_a_launched_megatron_process_refuses_its_experiment_out_of_range(tmp_path):
    """What a Megatron process started by `primus train` reads (PRIMUS_CONFIG + the launcher's overrides)."""
    environ = {"PRIMUS_CONFIG": _experiment(tmp_path, "megatron", "{}"),
               "PRIMUS_CONFIG_OVERRIDES": json.dumps(["log_avg_reset_interval=0"])}
    with pytest.raises(ConfigError, match=r"log_avg_reset_interval = '0': expected int >= 1, out of range"):
        module_params_from_env("megatron", environ)
