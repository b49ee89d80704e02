"""A corpus of secret shapes in param keys, values, tags, text, the environment and the MLflow URI:
none of them may appear in any file a run writes (journal, state, TensorBoard, W&B), in the MLflow
server's database, or on the console and in the logs."""

from __future__ import annotations

import logging
import secrets
import time

import pytest

from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, WandbConfig, start_run

pytestmark = pytest.mark.slow


def token(n: int = 24) -> str:
    return secrets.token_hex(n)[:n]


def corpus() -> tuple[dict, dict, list[str]]:
    s = {name: token() for name in ("api_key", "hf_token", "password", "aws_secret", "client_secret", "auth",
                                    "url", "bearer", "tag_token", "git")}
    shapes = {"openai": f"sk-proj-{token(32)}", "github": f"ghp_{token(36)}", "huggingface": f"hf_{token(34)}",
              "databricks": f"dapi{secrets.token_hex(16)}", "aws_id": "AKIA" + token(16).upper(),
              "slack": f"xoxb-{token(30)}", "jwt": f"eyJ{token(20)}.{token(30)}.{token(20)}"}
    params = {"wandb_api_key": s["api_key"], "hf_token": s["hf_token"], "db": {"password": s["password"]},
              "aws_secret_access_key": s["aws_secret"], "client_secret": s["client_secret"], "auth": s["auth"],
              "data_url": f"https://alice:{s['url']}@data.example.com/x", "headers": f"Authorization: Bearer {s['bearer']}",
              "urls": [f"postgres://u:{s['url']}@db/x"], **shapes, "lr": 1e-4}
    tags = {"deploy_token": s["tag_token"], "source": f"https://bob:{s['git']}@git.example.com/repo.git"}
    leaks = [*s.values(), *(v[4:] for v in shapes.values())]  # the secret part of each shape
    return params, tags, leaks


SHAPED = ("data_url", "headers", "urls", "openai", "github", "huggingface", "databricks", "aws_id", "slack", "jwt")


def test_no_secret_reaches_any_sink_file_or_console(tmp_path, mlflow_server, wandb_offline, monkeypatch, primus_caplog, capsys):
    params, tags, leaks = corpus()
    env_secret, uri_password = token(), token()
    monkeypatch.setenv("MY_SERVICE_TOKEN", env_secret)
    leaks += [env_secret, uri_password]
    # as Megatron logs its arguments: one text per argument, tagged with its name; plus free text
    # (a bare random value in free text is undetectable without its key: free text holds only shapes)
    shaped = [v for k, v in params.items() if k in SHAPED]
    texts = {**{k: str(v) for k, v in params.items() if not isinstance(v, dict)}, "notes": " ".join(map(str, shaped)) + f" {env_secret}"}
    primus_caplog.set_level(logging.DEBUG)
    uri = mlflow_server.uri.replace("http://", f"http://primus:{uri_password}@")
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="redaction", params=params, tags=tags,
                                   tensorboard=TensorBoardConfig(tmp_path / "tb"), wandb=WandbConfig(),
                                   mlflow=MlflowConfig(tracking_uri=uri)))
    for step in range(3):
        run.log(step, {"loss": 1.0 + step})
    for tag, text in texts.items():
        run.log_text(tag, text)
    assert run.flush(180)
    run.finish()
    # a dead server whose URI holds a password: the failure warnings must not show it
    dead = start_run(TrackingConfig(run_dir=tmp_path / "dead", exit_deadline_s=1,
                                    mlflow=MlflowConfig(tracking_uri=f"http://primus:{uri_password}@127.0.0.1:9")))
    dead.log(0, {"loss": 1.0})
    deadline = time.monotonic() + 60
    while not dead.stats()["sinks"]["mlflow"]["failures"] and time.monotonic() < deadline:
        time.sleep(0.05)
    dead.finish()

    from mlflow import MlflowClient

    mlrun = MlflowClient(mlflow_server.uri).get_run(run.mlflow_run_id)
    assert mlrun.data.params["wandb_api_key"] == "***" and mlrun.data.params["data_url"].startswith("https://alice:***@")
    assert mlrun.data.tags["text/hf_token"] == "***" and mlrun.data.tags["text/notes"].count("***") >= 10
    assert any("failed" in r.getMessage() for r in primus_caplog.records)  # the dead server was reported
    out = capsys.readouterr()
    surfaces = {"stdout": out.out, "stderr": out.err, "log": primus_caplog.text,
                "mlflow params/tags": repr(mlrun.data.params) + repr(mlrun.data.tags)}
    for path in [*tmp_path.rglob("*"), *mlflow_server.root.glob("mlflow.db*")]:
        if path.is_file() and not path.is_symlink():
            surfaces[str(path)] = path.read_bytes().decode("latin-1")
    assert len(surfaces) > 15  # journal, run.json, meta.json, cursors, TB events, W&B files, the server's db
    for where, content in surfaces.items():
        found = [leak for leak in leaks if leak in content]
        context = [content[max(0, content.index(f) - 300):content.index(f) + 100].replace(f, "<SECRET>") for f in found]
        assert not found, f"secret(s) in {where}: {context}"
