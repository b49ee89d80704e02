import math

import pytest
import yaml

from primus.config.yaml12 import Unparsed, loads, parse_scalar


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1e-5", 1e-5),
        ("3e4", 30000.0),
        ("-2.5E+3", -2500.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("010", 10),  # YAML 1.1 reads octal 8
        ("0o17", 15),
        ("0x1F", 31),
        ("true", True),
        ("False", False),
        ("null", None),
        ("~", None),
        ("yes", "yes"),  # YAML 1.1 reads True
        ("on", "on"),
        ("2024-01-01", "2024-01-01"),  # YAML 1.1 reads a date
        ("1_000", "1_000"),
        ("0.0.0", "0.0.0"),
    ],
)
def test_plain_scalars_follow_yaml_1_2(text, expected):
    value = loads(f"v: {text}")["v"]
    assert value == expected and type(value) is type(expected)


def test_infinities_and_nan():
    doc = loads("a: .inf\nb: -.Inf\nc: .nan")
    assert doc["a"] == math.inf and doc["b"] == -math.inf and math.isnan(doc["c"])


def test_quoted_numbers_stay_strings():
    assert loads("v: '1e-5'")["v"] == "1e-5"


def test_duplicate_keys_are_refused():
    with pytest.raises(yaml.YAMLError, match="duplicate key 'lr'"):
        loads("lr: 1\nlr: 2\n")


def test_parse_scalar_types_command_line_text():
    assert parse_scalar(Unparsed("1e-4")) == 1e-4
    assert parse_scalar(Unparsed("[1, 2]")) == [1, 2]
    assert parse_scalar(Unparsed("")) is None
    assert parse_scalar(Unparsed("a: b: c")) == "a: b: c"  # not YAML: stays text
