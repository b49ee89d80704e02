"""The schema's did-you-mean at every depth, and text interpolated into a list or mapping typed by upstream's
annotation: what a user reads in the error, and the typed value the trainer gets."""

from __future__ import annotations

import pytest

from primus.config.errors import ALREADY_REPORTED
from primus.config.schema import Param, Schema
from primus.config.yaml12 import Unparsed

# "steps" under three sections: the suggestion is the one at the level of the typo, else the closest anywhere
NESTED = Schema("test parameter", [Param("warmup", "int"), Param("a.y.steps", "int"), Param("a.x.steps", "int"),
                                   Param("lr", "float"),
                                   Param("training.warmup", "int"), Param("job.warmup", "int"),
                                   Param("model.attention.head.lr", "float")])


@pytest.mark.parametrize(("typo", "meant"), [
    ("a.y.step", "a.y.steps"), ("a.x.step", "a.x.steps"), ("training.warmpu", "training.warmup"),
    ("job.warmpu", "job.warmup"), ("lrr", "lr"), ("a.y.stepz", "a.y.steps"),
    ("warmpu", "warmup"), ("model.attention.head.lrr", "model.attention.head.lr")])
def test_the_suggestion_is_at_the_typos_level_first(typo, meant):
    assert NESTED.closest(typo) == meant


def test_no_suggestion_when_nothing_is_close():
    assert NESTED.closest("a.y.tokenizer") is None


ANNOTATED = Schema("test parameter", [Param("ids", "any", annotation="list[int]"),
                                      Param("sizes", "any", annotation="dict[str, int]")])


def test_interpolated_text_inside_a_list_or_mapping_is_typed_by_the_annotation():
    typed, problems = ANNOTATED.validate({"ids": [Unparsed("3"), 4], "sizes": {"a": Unparsed("5")}}, "exp.yaml")
    assert problems == [] and typed == {"ids": [3, 4], "sizes": {"a": 5}}


def test_interpolated_text_that_is_not_of_the_annotated_type_is_refused():
    typed, problems = ANNOTATED.validate({"ids": [Unparsed("three")]}, "exp.yaml")
    assert len(problems) == 1 and "ids" in problems[0]


# Built inside the tests, not at import: mutmut switches a mutant on only after the test modules are imported.
def test_bounds_belong_to_numbers_only():
    for bound in ("ge", "gt", "le"):
        with pytest.raises(TypeError, match=r"^train\.name: bounds need an int or float parameter, not str$"):
            Param("train.name", "str", **{bound: 1})
        assert Param("train.iters", "int", **{bound: 1}).expected().startswith("int ")
    assert Param("train.rate", "float", ge=0, le=1).expected() == "float >= 0 and <= 1"
    assert Param("train.name", "str").expected() == "str"


def test_a_schema_knows_every_section_above_a_key_and_its_own_keys():
    schema = Schema("toy parameter", [Param("a.b.c", "int"), Param("a.b.c", "str", primus=True),
                                      Param("top", "bool"), Param("a.x", "float")])
    assert schema.params["a.b.c"].type == "str"  # a later Param of a name replaces the one before
    assert schema.sections == {"a", "a.b"}
    assert schema.primus_keys == frozenset({"a.b.c"})
    assert all(schema.knows(k) for k in ("a", "a.b", "a.b.c", "top", "a.x")) and not schema.knows("b")
    typed, problems = schema.validate({"a": {"b": {"c": "s"}, "x": Unparsed("1.5")}, "top": True, "tpo": 1}, "here")
    assert typed == {"a": {"b": {"c": "s"}, "x": 1.5}, "top": True}
    assert problems == ["here: tpo is not a toy parameter; did you mean top?"]
    assert schema.validate({"a": 3}, "here")[1] == ["here: a is a section; write its keys under it as a mapping"]


def test_interpolated_items_of_a_typed_list_are_typed_and_plain_strings_are_kept():
    assert Param("ids", "int", is_list=True).coerce([Unparsed("3"), 4]) == ([3, 4], None)
    assert Param("names", "str", is_list=True).coerce(["3", Unparsed("x")]) == (["3", "x"], None)


def test_a_wrong_value_under_a_credential_name_is_hidden_in_the_problem():
    schema = Schema("toy parameter", [Param("api_key", "int")])
    assert schema.validate({"api_key": "hunter2hunter2"}, "here")[1] == [
        "here: api_key = '***': expected int, got str"]


def test_keys_after_an_already_reported_unknown_key_are_still_validated():
    schema = Schema("toy parameter", [Param("lr", "float"), Param("top", "bool")])
    typed, problems = schema.validate({"zzz": ALREADY_REPORTED, "lr": 1, "top": 2}, "here")
    assert typed == {"lr": 1.0, "top": 2}
    assert problems == ["here: top = 2: expected bool (true or false), got int"]
