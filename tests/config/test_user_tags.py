"""The user's tags and notes read from every spelling (a YAML mapping or list, key=value text), and what is
refused before training, with the reason (``primus/config/schemas/user_tags.py``)."""

import pytest

from primus.config.schemas.tracking import value_problem
from primus.config.schemas.user_tags import as_list, as_mapping


@pytest.mark.parametrize(("given", "tags"), [
    ({"team": "llm", "priority": 1, "ablation": True, "lr": 0.5}, {"team": "llm", "priority": "1", "ablation": "true",
                                                                   "lr": "0.5"}),
    ("team=llm, owner = ci,", {"team": "llm", "owner": "ci"}),
    ("url=http://host/a=b", {"url": "http://host/a=b"}),  # the first '=' separates
    (None, {}),
    ("", {}),
    ({}, {}),
])
def test_a_mapping_or_its_text_becomes_text_tags(given, tags):
    assert as_mapping(given) == tags


@pytest.mark.parametrize(("given", "reason"), [
    ("team=llm,owner", "'owner' has no '=': write key=value,key=value"),
    (["team", "llm"], "got list: give a mapping (key: value) or key=value,key=value"),
    ({"team": {"name": "llm"}}, "'team' holds a dict: a tag's value is one text, number or bool"),
    ({"": "x"}, "key '' is not a name"),
    ({"primus.backend": "mine"}, "key 'primus.backend' is in the primus.* namespace Primus sets"),
    ("mlflow.note.content=hi", "key 'mlflow.note.content' is the run's description: set mlflow_description"),
    ({"api_token": "abc"}, "'api_token' holds a credential"),
    ({"owner": "hf_abcdefghijklmnopqrstuvwxyz"}, "'owner' holds a credential"),
])
def test_a_bad_mapping_is_refused_with_what_to_write(given, reason):
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        as_mapping(given)


def test_the_refusal_never_quotes_a_secret_value():
    secret = "hf_abcdefghijklmnopqrstuvwxyz"
    problem = value_problem("mlflow_tags", {"owner": secret})
    assert problem is not None and secret not in problem


@pytest.mark.parametrize(("given", "tags"), [
    (["cpu", "e2e", 7], ("cpu", "e2e", "7")),
    ("cpu, e2e,,", ("cpu", "e2e")),
    ([], ()),
    (None, ()),
])
def test_a_list_or_its_text_becomes_wandb_tags(given, tags):
    assert as_list(given) == tags


@pytest.mark.parametrize(("given", "reason"), [
    ({"a": 1}, "give a list of texts, or text,text"),
    ([["nested"]], "give a list of texts, or text,text"),
    (["x" * 65], "tag 'xxxxxxxxxxxxxxxxxxxx'... has 65 characters: W&B takes at most 64"),
    (["ghp_" + "a" * 30], "'tag' holds a credential"),
])
def test_a_bad_wandb_tag_list_is_refused(given, reason):
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(").replace(")", r"\)")):
        as_list(given)


def test_a_note_is_free_text_but_for_credentials():
    assert value_problem("wandb_notes", "lr sweep, see https://wiki/x") is None
    assert value_problem("mlflow_description", "sk-proj-abcdefghijklmnopqrstuvwx") is not None
    assert value_problem("mlflow_description", None) is None
