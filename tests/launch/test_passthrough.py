"""The allow-list: the packaged defaults, a user layer and the experiment's layer, names only."""

from __future__ import annotations

import pytest

from primus.config import ConfigError
from primus.launch.passthrough import load_passthrough

ISSUE_NAMES = ("WANDB_API_KEY", "WANDB_PROJECT", "WANDB_RUN_NAME", "WANDB_TEAM", "WANDB_ENTITY", "WANDB_MODE",
               "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD",
               "DATABRICKS_HOST", "DATABRICKS_TOKEN", "HF_TOKEN")
# what the tracker clients read besides: MLflow's log-in and TLS settings, TorchTitan's W&B run settings
CLIENT_NAMES = ("MLFLOW_EXPERIMENT_NAME", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_INSECURE_TLS",
                "MLFLOW_TRACKING_SERVER_CERT_PATH", "MLFLOW_TRACKING_CLIENT_CERT_PATH", "MLFLOW_WORKSPACE",
                "WANDB_RUN_ID", "WANDB_RUN_NOTES", "WANDB_RUN_TAGS", "WANDB_RUN_JOB_TYPE", "WANDB_RUN_GROUP",
                "WANDB_RESUME_FROM", "WANDB_FORK_FROM")


def test_defaults_allow_the_tracker_variables_and_prefixes_only(tmp_path):
    allow = load_passthrough({}, {"HOME": str(tmp_path)})
    assert all(allow.allows(name) for name in (*ISSUE_NAMES, *CLIENT_NAMES, "NCCL_DEBUG", "PRIMUS_TEAM"))
    assert not any(allow.allows(name) for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PATH", "SSH_AUTH_SOCK"))
    environ = {"PATH": "/bin", "HOME": "/h", "NCCL_DEBUG": "INFO", "GITHUB_TOKEN": "x", "WANDB_MODE": "offline"}
    assert allow.select(environ) == ["NCCL_DEBUG", "WANDB_MODE"]
    assert allow.select(environ, host=True, skip=["WANDB_MODE"]) == ["HOME", "NCCL_DEBUG", "PATH"]


def test_user_file_then_experiment_layer_later_wins(tmp_path):
    user = tmp_path / "passthrough.yaml"
    user.write_text("names: [TEAM_CACHE]\nprefixes: [HIP_]\nexclude: [HF_TOKEN, PRIMUS_SECRET_SAUCE, NCCL_]\n")
    environ = {"PRIMUS_PASSTHROUGH_FILE": str(user)}
    allow = load_passthrough({}, environ)
    assert allow.allows("TEAM_CACHE") and allow.allows("HIP_VISIBLE_DEVICES")
    assert not allow.allows("HF_TOKEN")
    assert not allow.allows("PRIMUS_SECRET_SAUCE") and allow.allows("PRIMUS_TEAM")  # one name out of a prefix
    assert not allow.allows("NCCL_DEBUG")  # a whole prefix out
    again = load_passthrough({"names": ["HF_TOKEN"], "exclude": ["TEAM_CACHE"]}, environ)
    assert again.allows("HF_TOKEN") and not again.allows("TEAM_CACHE")


def test_user_file_found_in_the_config_home(tmp_path):
    (tmp_path / "primus").mkdir()
    (tmp_path / "primus" / "passthrough.yaml").write_text("names: [TEAM_CACHE]\n")
    assert load_passthrough({}, {"XDG_CONFIG_HOME": str(tmp_path)}).allows("TEAM_CACHE")
    assert not load_passthrough({}, {"XDG_CONFIG_HOME": str(tmp_path / "none")}).allows("TEAM_CACHE")


def test_missing_named_file_and_bad_keys_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such passthrough file.*unset PRIMUS_PASSTHROUGH_FILE"):
        load_passthrough({}, {"PRIMUS_PASSTHROUGH_FILE": str(tmp_path / "nope.yaml")})
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [X]\n")
    with pytest.raises(ConfigError, match="name is not a passthrough key; did you mean names"):
        load_passthrough({}, {"PRIMUS_PASSTHROUGH_FILE": str(bad)})


def test_a_value_in_the_list_is_refused_without_echoing_it(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_passthrough({"names": ["WANDB_API_KEY=abcdef0123456789"]}, {"HOME": str(tmp_path)})
    message = str(error.value)
    assert "launch.passthrough: names: 'WANDB_API_KEY=...' is not an environment variable name" in message
    assert "abcdef0123456789" not in message


def test_the_alert_webhook_is_passed_by_name_not_only_by_the_primus_prefix(tmp_path):
    """Listed by name: a user layer that drops the PRIMUS_ prefix still passes it (by name, never its value)."""
    allow = load_passthrough({}, {"HOME": str(tmp_path)})
    assert "PRIMUS_ALERT_WEBHOOK" in allow.names
