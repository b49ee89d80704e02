import pytest

from primus.config.errors import ALREADY_REPORTED
from primus.config.secrets import env_var_for, refuse_secrets


@pytest.mark.parametrize(
    "key, value, env",
    [
        ("wandb_api_key", "0123456789abcdef", "WANDB_API_KEY"),
        ("databricks_token", "dapi" + "0" * 32, "DATABRICKS_TOKEN"),
        ("mlflow_tracking_password", "hunter2", "MLFLOW_TRACKING_PASSWORD"),
        ("hf_token", "abc123", "HF_TOKEN"),
        ("my_service_secret", "s3cr3t", "MY_SERVICE_SECRET"),
        ("note", "hf_" + "a" * 30, "HF_TOKEN"),  # by value shape, whatever the key
    ],
)
def test_literal_secret_is_refused_with_its_environment_variable(key, value, env):
    tree, problems = refuse_secrets({"modules": {"m": {"overrides": {key: value, "keep": 1}}}}, "exp.yaml")
    assert tree == {"modules": {"m": {"overrides": {key: ALREADY_REPORTED, "keep": 1}}}}
    assert len(problems) == 1
    assert problems[0].startswith(f"exp.yaml: modules.m.overrides.{key}: a credential is written in config")
    assert problems[0].endswith(f"export {env} instead")
    assert value not in problems[0]


def test_url_with_credentials_is_refused_even_in_a_list():
    _, problems = refuse_secrets({"endpoints": ["http://ok.example", "https://u:pw@x.example"]}, "exp.yaml")
    assert len(problems) == 1 and "endpoints[1]" in problems[0]


def test_not_secrets():
    tree = {
        "wandb_api_key": None,  # unset is fine
        "apply_query_key_layer_scaling": True,  # not a string
        "moe_token_dispatcher_type": "alltoall",  # an upstream setting named *_token_*
        "fim_pad_token": "<fim_pad>",
        "tokenizer_type": "NullTokenizer",
        "hf_token": "${HF_TOKEN_FILE_PATH}",  # left to interpolation
    }
    assert refuse_secrets(tree, "exp.yaml") == (tree, [])


def test_env_var_for_defaults_to_the_key_upper_cased():
    assert env_var_for("my.odd-key", "x") == "MY_ODD_KEY"
