from pathlib import Path

from primus.cli.main import main
from primus.config import yaml12

TINY = str(Path(__file__).resolve().parents[2] / "configs/megatron/tiny_cpu.yaml")


def test_validate_accepts_the_tiny_experiment(capsys):
    assert main(["config", "validate", "--config", TINY, "train_iters=5"]) == 0
    assert "valid: pre_trainer (megatron, " in capsys.readouterr().out


def test_validate_lists_every_problem_and_fails(capsys, tmp_path):
    assert main(["config", "validate", "--config", TINY, "trian_iters=3", "lr=abc", "wandb_api_key=abcdef123456"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("3 config problems:")
    assert "trian_iters: no module has this parameter; did you mean train_iters?" in err
    assert "lr = 'abc': expected float >= 0 or null, got str" in err
    assert "export WANDB_API_KEY instead" in err and "abcdef123456" not in err


def test_show_prints_the_resolved_config_redacted(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef123456")
    overrides = [f"workspace={tmp_path}", "wandb_project=p-tok-abcdef123456", "lr=2e-3"]
    assert main(["config", "show", "--config", TINY, *overrides]) == 0
    out = capsys.readouterr().out
    shown = yaml12.loads(out)
    params = shown["modules"]["pre_trainer"]["params"]
    assert shown["workspace"] == str(tmp_path) and shown["exp_name"] == "tiny_cpu"
    assert params["lr"] == 2e-3 and params["train_iters"] == 20 and params["disable_mlflow"] is False
    assert params["wandb_project"] == "p-***" and "abcdef123456" not in out


def test_show_of_a_bad_config_fails_with_the_problems(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("modules: {m: {framework: megatron, config: pre_trainer.yaml, overrides: {log_intervall: 1}}}\n")
    assert main(["config", "show", "--config", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "log_intervall is not a megatron parameter; did you mean log_interval?" in captured.err
