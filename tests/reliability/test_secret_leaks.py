"""Secret shapes in the environment and in the MLflow tracking URI (user:password): a real tiny Megatron training with TensorBoard, W&B (offline) and MLflow (the
session server, its logs uploaded) runs with them present, and none may appear in any file under its
directory, its console output, the TensorBoard events, the W&B offline file, the MLflow run's params,
tags and artifacts, or the server's database. (The tracking core's own corpus with synthetic runs is
tests/tracking/test_redaction_corpus.py; `primus train`'s with planted credentials is
tests/cli/test_train_cmd.py; secrets written in YAML or on the command line are refused: test_bad_inputs.py.)"""

from __future__ import annotations

import secrets

import pytest
from reliability_runs import MEGATRON, Training, mlflow_run_id

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


@pytest.fixture(scope="module")
def tracked_with_secrets(mlflow_server, tmp_path_factory, titan_assets_dir):
    uri_password = token(24)
    env = {**SECRETS, "WANDB_MODE": "offline",
           "MLFLOW_TRACKING_URI": mlflow_server.uri.replace("http://", f"http://primus:{uri_password}@")}
    # (a secret-shaped *argument* value, e.g. --mlflow-run-name nightly-ghp_..., is not in this corpus: upstream
    # prints every argument at start-up and names the tracker runs with it; see the H10 report)
    args = [*MEGATRON.args(3, "h10-secrets", wandb=True), "--mlflow-upload-logs", "--log-throughput"]
    training = Training(MEGATRON, tmp_path_factory.mktemp("secrets"), args, env=env, assets=titan_assets_dir)
    training.wait()
    leaks = {name: value.split(" ")[-1].split(":")[-1].split("@")[0] for name, value in SECRETS.items()}
    leaks["MLFLOW_TRACKING_URI password"] = uri_password
    return training, leaks


def test_the_training_ran_with_every_tracker(tracked_with_secrets, session_client):
    training, _ = tracked_with_secrets
    result = training.result()
    result.assert_trained()
    run = session_client.get_run(mlflow_run_id(training.run_dir()))
    assert run.info.status == "FINISHED" and "lm loss" in run.data.metrics
    assert list(training.workdir.rglob("events.out.tfevents.*")) and list(training.workdir.rglob("run-*.wandb"))


def test_no_secret_appears_anywhere(tracked_with_secrets, mlflow_server, session_client):
    training, leaks = tracked_with_secrets
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
