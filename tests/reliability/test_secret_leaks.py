"""Secret shapes in the environment, in the MLflow tracking URI (user:password) and in an upstream argument
that upstream prints at start-up and uploads as a run param (``--one-logger-run-name nightly-ghp_...``): a
real tiny Megatron training with TensorBoard, W&B (offline) and MLflow (the session server, its logs
uploaded) runs with them present, and none may appear in any file under its directory, its console output,
the TensorBoard events, the W&B offline file, the MLflow run's params, tags and artifacts, or the server's
database. A tracker name holding a credential (``--wandb-exp-name nightly-hf_...``, which would name the
MLflow and W&B runs) is refused before training, without showing it and without reaching any tracker.
(The tracking core's own corpus with synthetic runs is tests/tracking/test_redaction_corpus.py; `primus
train`'s with planted credentials is tests/cli/test_train_cmd.py; secrets written in YAML or as Primus
settings on the command line are refused: test_bad_inputs.py.)"""

from __future__ import annotations

import secrets

import pytest
from reliability_runs import MEGATRON, Training, mlflow_run_id
from support.journal_files import run_dirs_under

pytestmark = pytest.mark.slow


def token(n: int) -> str:
    return secrets.token_hex(n)[:n]


SECRETS = {  # environment variable -> a value of the shape that name usually holds
    "WANDB_API_KEY": token(40),
    "HF_TOKEN": f"hf_{token(34)}",
    "GITHUB_TOKEN": f"ghp_{token(36)}",
    "OPENAI_API_KEY": f"sk-proj-{token(32)}",
    "DATABRICKS_TOKEN": f"dapi{token(32)}",
    "AWS_ACCESS_KEY_ID": "AKIA" + token(16).upper(),
    "AWS_SECRET_ACCESS_KEY": token(40),
    "SLACK_BOT_TOKEN": f"xoxb-{token(30)}",
    "MLFLOW_TRACKING_PASSWORD": token(24),
    "MY_SERVICE_SECRET": token(24),
    "DATA_AUTH_HEADER": f"Authorization: Bearer {token(32)}",
    "DATA_URL": f"https://alice:{token(20)}@data.example.com/corpus",
}


ARGUMENT_TOKEN = f"ghp_{token(36)}"  # upstream's --one-logger-run-name: printed, and a run param like every argument
NAME_TOKEN = f"hf_{token(34)}"  # --wandb-exp-name: it would name the runs
REFUSED_EXPERIMENT = "h10-secret-run-name"


@pytest.fixture(scope="module")
def tracked_with_secrets(mlflow_server, tmp_path_factory):
    """The training with secrets around it, and the refused one (started alongside: both mostly import)."""
    uri_password = token(24)
    env = {**SECRETS, "WANDB_MODE": "offline",
           "MLFLOW_TRACKING_URI": mlflow_server.uri.replace("http://", f"http://primus:{uri_password}@")}
    args = [*MEGATRON.args(3, "h10-secrets", wandb=True), "--mlflow-upload-logs", "--log-throughput",
            "--one-logger-run-name", f"nightly-{ARGUMENT_TOKEN}"]
    training = Training(MEGATRON, tmp_path_factory.mktemp("secrets"), args, env=env)
    refused = Training(MEGATRON, tmp_path_factory.mktemp("secret-run-name"),
                       [*MEGATRON.args(3, REFUSED_EXPERIMENT, wandb=True), "--wandb-exp-name", f"nightly-{NAME_TOKEN}"],
                       env={"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": mlflow_server.uri})
    training.wait()
    refused.wait()
    leaks = {name: value.split(" ")[-1].split(":")[-1].split("@")[0] for name, value in SECRETS.items()}
    leaks["MLFLOW_TRACKING_URI password"] = uri_password
    leaks["--one-logger-run-name"] = ARGUMENT_TOKEN
    return training, refused, leaks


def test_the_training_ran_with_every_tracker(tracked_with_secrets, session_client):
    training, _, _ = tracked_with_secrets
    result = training.result()
    result.assert_trained()
    run = session_client.get_run(mlflow_run_id(training.run_dir()))
    assert run.info.status == "FINISHED" and "lm loss" in run.data.metrics
    assert list(training.workdir.rglob("events.out.tfevents.*")) and list(training.workdir.rglob("run-*.wandb"))
    # upstream printed the argument, masked
    assert "one_logger_run_name" in result.output and f"nightly-{ARGUMENT_TOKEN}" not in result.output
    assert run.data.params["one_logger_run_name"] == "nightly-***"  # uploaded, masked


def test_no_secret_appears_anywhere(tracked_with_secrets, mlflow_server, session_client):
    training, _, leaks = tracked_with_secrets
    run = session_client.get_run(mlflow_run_id(training.run_dir()))
    artifacts = [a.path for a in session_client.list_artifacts(run.info.run_id)]
    surfaces = {"console": training.result().output,
                "MLflow params, tags, run name": repr(run.data.params) + repr(run.data.tags) + run.info.run_name,
                "MLflow artifact list": repr(artifacts)}
    for path in [*training.workdir.rglob("*"), *mlflow_server.root.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            surfaces[str(path)] = path.read_bytes().decode("latin-1")
    assert any("tfevents" in s for s in surfaces) and any(s.endswith(".wandb") for s in surfaces)
    assert any(s.endswith("mlflow.db") for s in surfaces)
    found = {where: [name for name, value in leaks.items() if value in content] for where, content in surfaces.items()}
    assert not {where: names for where, names in found.items() if names}


def test_a_run_name_holding_a_credential_is_refused_before_any_tracker_sees_it(tracked_with_secrets, mlflow_server,
                                                                             session_client):
    _, refused, _ = tracked_with_secrets
    result = refused.result()
    assert result.returncode not in (0, None), result.explain()
    assert "wandb_exp_name='nightly-***' holds what looks like a credential" in result.output, result.explain()
    assert "iteration        1/" not in result.output
    assert session_client.get_experiment_by_name(REFUSED_EXPERIMENT) is None
    assert run_dirs_under(refused.workdir) == [] and list(refused.workdir.rglob("*.wandb")) == []
    files = [p for p in [*refused.workdir.rglob("*"), *mlflow_server.root.rglob("*")] if p.is_file()]
    assert not [str(p) for p in files if NAME_TOKEN.encode() in p.read_bytes()]
