import math

import pytest
import yaml

from primus.config.yaml12 import Unparsed, describe_error, loads, parse_scalar


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


def test_merge_keys_keep_the_yaml_1_2_number_rules():
    doc = loads("x-base: &base {lr: 1e-5, iters: 010, on: yes}\n"
                "x-more: &more {iters: 3, width: 0x10}\n"
                "a: {<<: *base, iters: 7}\n"
                "b:\n  <<: [*more, *base]\n")
    assert doc["a"] == {"lr": 1e-5, "iters": 7, "on": "yes"}  # the mapping's own key wins
    assert doc["b"] == {"lr": 1e-5, "iters": 3, "width": 16, "on": "yes"}  # the first merged mapping wins


def test_a_merged_key_may_repeat_an_own_key_but_own_keys_may_not_repeat():
    assert loads("x: &x {a: 1}\ny: {<<: *x, a: 2}\n")["y"] == {"a": 2}
    with pytest.raises(yaml.YAMLError, match="duplicate key 'a'"):
        loads("x: &x {a: 1}\ny: {<<: *x, a: 2, a: 3}\n")


@pytest.mark.parametrize("text, expected", [
    ("? [a, b]\n: 1\n", "exp.yaml:1:3: invalid YAML: a list or mapping as a key (`? [a, b]`) is not supported"),
    ("a: {b: 1\n", "exp.yaml:2:1: invalid YAML: did not find expected ',' or '}' (while parsing a flow mapping "
                   "started at line 1)"),
    ("a: 1\n  b: 2\n", "exp.yaml:2:4: invalid YAML: mapping values are not allowed in this context"),
    ("a: *nope\n", "exp.yaml:1:4: invalid YAML: found undefined alias"),
])
def test_malformed_input_names_file_line_and_column(text, expected):
    with pytest.raises(yaml.YAMLError) as error:
        loads(text)
    assert describe_error("exp.yaml", error.value).startswith(expected)
