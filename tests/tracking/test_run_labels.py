"""The user's labels for a run: an option given wins over its environment variable, a bad variable is named
(``primus/tracking/tags/run_labels.py``)."""

from primus.tracking.tags.run_labels import run_labels

UNSET = {"mlflow_tags": None, "mlflow_description": None, "wandb_tags": None, "wandb_notes": None}


def labels(options=None, env=None):
    errors = []
    return run_labels({**UNSET, **(options or {})}, env or {}, errors.append), errors


def test_nothing_given_nothing_labelled():
    found, errors = labels()
    assert (dict(found.tags), found.wandb_tags, found.wandb_notes, errors) == ({}, None, None, [])


def test_the_environment_labels_a_run_whose_options_are_unset():
    found, errors = labels(env={"PRIMUS_MLFLOW_TAGS": "team=llm,stage=sft", "PRIMUS_MLFLOW_DESCRIPTION": "sweep 3",
                                "WANDB_TAGS": "a,b", "WANDB_NOTES": "from env"})
    assert dict(found.tags) == {"team": "llm", "stage": "sft", "mlflow.note.content": "sweep 3"}
    assert (found.wandb_tags, found.wandb_notes, errors) == (("a", "b"), "from env", [])


def test_an_option_wins_over_its_variable_whole():
    found, _ = labels({"mlflow_tags": {"team": "yaml"}, "wandb_tags": [], "wandb_notes": "mine"},
                      {"PRIMUS_MLFLOW_TAGS": "team=env,extra=1", "WANDB_TAGS": "env", "WANDB_NOTES": "env"})
    assert (dict(found.tags), found.wandb_tags, found.wandb_notes) == ({"team": "yaml"}, (), "mine")


def test_a_bad_variable_is_named_with_the_option_it_stands_for():
    found, errors = labels(env={"PRIMUS_MLFLOW_TAGS": "team", "WANDB_TAGS": "x" * 70})
    assert errors == [
        "PRIMUS_MLFLOW_TAGS (read for mlflow_tags) is invalid: 'team' has no '=': write key=value,key=value",
        f"WANDB_TAGS (read for wandb_tags) is invalid: tag {'x' * 20!r}... has 70 characters: W&B takes at most 64",
    ]
    assert (dict(found.tags), found.wandb_tags) == ({}, None)
