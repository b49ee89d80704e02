"""Before launching: an enabled tracker without the credential it needs is an error naming the variable;
for Slurm and containers the variable must also pass the allow-list, and a container sees no ~/.netrc."""

from __future__ import annotations

from pathlib import Path

import pytest

from primus.config import load_experiment
from primus.launch.credentials import enabled_trackers, missing_credentials
from primus.redaction import redact_text

REPO = Path(__file__).resolve().parents[2]
MEGATRON = REPO / "configs" / "megatron" / "tiny_cpu.yaml"
TORCHTITAN = REPO / "configs" / "torchtitan" / "llama3_debug_cpu.yaml"
KEY = "0123456789abcdef0123456789abcdef01234567"


def _module(path: Path, *overrides: str):
    return next(iter(load_experiment(path, overrides).modules.values()))


def everything(name: str) -> bool:
    return True


@pytest.fixture
def no_login(tmp_path, monkeypatch):
    """No `wandb login`: an empty netrc for api.wandb.ai."""
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    (tmp_path / "netrc").write_text("")
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    return tmp_path / "netrc"


def test_which_trackers_each_backend_turns_on():
    assert enabled_trackers(_module(MEGATRON)) == (False, True)
    assert enabled_trackers(_module(MEGATRON, "disable_wandb=false", "disable_mlflow=true")) == (True, False)
    assert enabled_trackers(_module(TORCHTITAN, "metrics.enable_wandb=true")) == (True, True)


def test_wandb_online_needs_a_key_or_a_login(no_login):
    module = _module(TORCHTITAN, "metrics.enable_wandb=true")
    [problem] = missing_credentials(module, {}, everything, home_visible=True)
    assert "W&B is enabled and online (WANDB_MODE=online) but WANDB_API_KEY is not set" in problem
    assert "set WANDB_API_KEY to your API key (https://wandb.ai/authorize)" in problem
    assert "WANDB_MODE=offline" in problem
    assert redact_text(problem) == problem  # printed through the redactor, which would eat a NAME=<placeholder>
    assert missing_credentials(module, {"WANDB_API_KEY": KEY}, everything, home_visible=True) == []
    assert missing_credentials(module, {"WANDB_MODE": "offline"}, everything, home_visible=True) == []

    no_login.write_text(f"machine api.wandb.ai\n  login user\n  password {KEY}\n")  # what `wandb login` writes
    assert missing_credentials(module, {}, everything, home_visible=True) == []
    [problem] = missing_credentials(module, {}, everything, home_visible=False)
    assert "(a container does not see ~/.netrc)" in problem


def test_the_allow_list_must_let_the_credential_through(no_login):
    module = _module(MEGATRON, "disable_wandb=false")
    blocked = {"WANDB_API_KEY", "WANDB_MODE"}.__contains__
    [problem] = missing_credentials(module, {"WANDB_API_KEY": KEY}, lambda n: not blocked(n), home_visible=True)
    assert "WANDB_API_KEY is set but the passthrough allow-list excludes it" in problem
    assert KEY not in problem
    [problem] = missing_credentials(module, {"WANDB_MODE": "offline"}, lambda n: not blocked(n), home_visible=True)
    assert "WANDB_MODE=offline is set but the passthrough allow-list excludes it" in problem


def test_databricks_needs_host_and_token_or_a_profile(tmp_path, monkeypatch):
    module = _module(MEGATRON)  # MLflow on
    environ = {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_CONFIG_FILE": str(tmp_path / "cfg")}
    [problem] = missing_credentials(module, environ, everything, home_visible=True)
    assert "DATABRICKS_HOST is not set and DATABRICKS_TOKEN is not set" in problem
    assert ("export DATABRICKS_HOST=https://<workspace>.cloud.databricks.com and set DATABRICKS_TOKEN to a personal "
            "access token") in problem
    assert redact_text(problem) == problem
    both = {**environ, "DATABRICKS_HOST": "https://x.cloud.databricks.com", "DATABRICKS_TOKEN": "dapi" + "0" * 32}
    assert missing_credentials(module, both, everything, home_visible=True) == []
    (tmp_path / "cfg").write_text("[DEFAULT]\nhost = https://x.cloud.databricks.com\n")
    assert missing_credentials(module, environ, everything, home_visible=True) == []
    assert missing_credentials(module, environ, everything, home_visible=False) != []
    assert missing_credentials(module, {"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000"}, everything, True) == []
