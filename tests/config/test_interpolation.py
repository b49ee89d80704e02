from primus.config.errors import ALREADY_REPORTED
from primus.config.interpolation import interpolate
from primus.config.yaml12 import Unparsed


def test_variables_and_defaults_are_substituted():
    tree = {"a": "${TEAM}", "b": "${MISSING:fallback}", "c": "x-${TEAM}-${N:3}", "d": "plain", "e": 5}
    out, problems = interpolate(tree, "f.yaml", {"TEAM": "ml"})
    assert problems == []
    assert out == {"a": "ml", "b": "fallback", "c": "x-ml-3", "d": "plain", "e": 5}
    assert isinstance(out["a"], Unparsed) and not isinstance(out["d"], Unparsed)


def test_unset_variable_names_the_variable_and_the_key():
    out, problems = interpolate({"modules": {"m": {"exp": "${EXP_NAME}"}}}, "f.yaml", {})
    assert problems == [
        "f.yaml: modules.m.exp: ${EXP_NAME} is not set; export EXP_NAME or give a default: ${EXP_NAME:value}"
    ]
    assert out["modules"]["m"]["exp"] is ALREADY_REPORTED


def test_secret_variable_reference_is_refused():
    _, problems = interpolate({"note": "${WANDB_API_KEY}"}, "f.yaml", {"WANDB_API_KEY": "0" * 40})
    assert len(problems) == 1
    assert "f.yaml: note: a credential is referenced as ${WANDB_API_KEY}" in problems[0]
    assert "export WANDB_API_KEY" in problems[0]


def test_value_shaped_like_a_secret_is_refused_whatever_the_variable():
    env = {"TRACKING": "https://bob:hunter2@mlflow.example.com"}
    _, problems = interpolate({"uri": "${TRACKING}"}, "f.yaml", env)
    assert len(problems) == 1 and problems[0].startswith("f.yaml: uri: a credential is interpolated from ${TRACKING}")
    assert "hunter2" not in problems[0]


def test_secret_named_key_refuses_any_interpolated_value():
    _, problems = interpolate({"hf_token": "${SOME_VAR}"}, "f.yaml", {"SOME_VAR": "abcdefgh"})
    assert len(problems) == 1 and "export HF_TOKEN" in problems[0] and "abcdefgh" not in problems[0]
