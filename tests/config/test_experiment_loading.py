import subprocess
import sys
from pathlib import Path

import pytest

from primus.config import ConfigError, load_experiment

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "configs/megatron/tiny_cpu.yaml"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def two_module_experiment(tmp_path: Path) -> Path:
    return write(
        tmp_path / "two.yaml",
        "exp_name: two\n"
        "modules:\n"
        "  first: {framework: megatron, config: pre_trainer.yaml}\n"
        "  second: {framework: megatron, config: pre_trainer.yaml, overrides: {train_iters: 7}}\n"
        "  titan: {framework: torchtitan, config: pre_trainer.yaml}\n",
    )


def test_tiny_cpu_resolves_presets_model_and_overrides_in_order():
    exp = load_experiment(TINY, environ={})
    assert exp.name == "tiny_cpu" and exp.workspace == Path("output").absolute()
    mod = exp.modules["pre_trainer"]
    assert mod.framework == "megatron"
    p = mod.params
    # module preset (pre_trainer.yaml over trainer_base.yaml), model preset, then overrides
    assert p["log_throughput"] is True and p["log_interval"] == 1 and p["tensorboard_queue_size"] == 1000
    assert (p["num_layers"], p["hidden_size"], p["seq_length"], p["vocab_size"]) == (2, 64, 128, 1024)
    assert p["lr"] == 1e-3 and isinstance(p["lr"], float) and p["min_lr"] == 1e-4
    assert p["train_iters"] == 20 and p["disable_tensorboard"] is False and p["disable_wandb"] is True
    assert "disable_mlflow" in mod.primus_keys and "train_iters" not in mod.primus_keys
    assert exp.raw["modules"]["pre_trainer"]["params"] == p


def test_interpolated_experiment_keys_come_from_the_environment():
    exp = load_experiment(TINY, environ={"PRIMUS_EXP_NAME": "from_env", "PRIMUS_WORKSPACE": "/tmp/ws"})
    assert exp.name == "from_env" and exp.workspace == Path("/tmp/ws")


def test_command_line_overrides_win_and_are_typed_by_the_schema(tmp_path):
    exp = load_experiment(
        TINY,
        ["train_iters=5", "lr=1e-4", "modules.pre_trainer.overrides.seed=7", f"workspace={tmp_path}",
         "wandb_project=123", "data_path=[a, b]"],
        environ={},
    )
    p = exp.modules["pre_trainer"].params
    assert p["train_iters"] == 5 and p["lr"] == 1e-4 and p["seed"] == 7
    assert p["wandb_project"] == "123" and p["data_path"] == ["a", "b"]
    assert exp.workspace == tmp_path


def test_bare_key_routes_to_the_module_that_has_it(tmp_path):
    exp = load_experiment(two_module_experiment(tmp_path), ["metrics.log_freq=1"], environ={})
    assert exp.modules["titan"].params["metrics"]["log_freq"] == 1
    assert exp.modules["second"].params["train_iters"] == 7


def test_ambiguous_bare_key_is_an_error_naming_both_modules(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_experiment(two_module_experiment(tmp_path), ["train_iters=3"], environ={})
    assert err.value.problems == [
        "command line: train_iters: more than one module has this parameter; write "
        "modules.first.overrides.train_iters=3 or modules.second.overrides.train_iters=3"
    ]


def test_every_problem_is_listed_at_once(tmp_path):
    exp_file = write(
        tmp_path / "bad.yaml",
        "work_group: ${NOT_SET_ANYWHERE}\n"
        "colour: blue\n"
        "modules:\n"
        "  pre_trainer:\n"
        "    framework: megatron\n"
        "    config: pre_trainer.yaml\n"
        "    model: no_such_model.yaml\n"
        "    overrides: {trian_iters: 3, lr: fast, wandb_api_key: abcdef123456, disable_wandb: yes}\n"
        "  other: {framework: jax, config: x.yaml}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_experiment(exp_file, ["log_interval=1e3", "nonsense"], environ={})
    text = str(err.value)
    assert text.startswith("10 config problems:\n  - ")  # the refused secret is not reported twice
    for expected in [
        "work_group: ${NOT_SET_ANYWHERE} is not set",
        "modules.pre_trainer.overrides.wandb_api_key: a credential is written in config",
        "export WANDB_API_KEY instead",
        "command line: 'nonsense' is not key=value",
        "colour is not a top-level key",
        "modules.other: framework = 'jax': expected one of ['megatron', 'torchtitan', 'maxtext', 'megatron_bridge']",
        "modules.pre_trainer: 'no_such_model.yaml': no such preset",
        "trian_iters is not a megatron parameter; did you mean train_iters?",
        "lr = 'fast': expected float >= 0 or null, got str",
        "disable_wandb = 'yes': expected bool",
        "log_interval = '1e3': expected int >= 1, got float; write it as a whole number: 1000",
    ]:
        assert expected in text
    assert "abcdef123456" not in text


def test_preset_next_to_the_experiment_file_is_found(tmp_path):
    write(tmp_path / "mine.yaml", "train_iters: 4\nlog_interval: 2\n")
    exp_file = write(tmp_path / "e.yaml", "modules: {m: {framework: megatron, config: mine.yaml}}\n")
    assert load_experiment(exp_file, environ={}).modules["m"].params == {"train_iters": 4, "log_interval": 2}


def test_maxtext_passes_unlisted_keys_through_typed(tmp_path):
    exp_file = write(
        tmp_path / "mt.yaml",
        "modules: {m: {framework: maxtext, config: pre_trainer.yaml, overrides: {steps: '${STEPS:10}'}}}\n",
    )
    params = load_experiment(exp_file, ["enable_mlflow=true"], environ={}).modules["m"].params
    assert params["steps"] == 10 and params["enable_mlflow"] is True and params["log_period"] == 100


def test_redacted_hides_secret_environment_values_that_reach_the_config(tmp_path, monkeypatch):
    exp = load_experiment(TINY, [f"workspace={tmp_path}", "wandb_project=team-abcdef123456"], environ={})
    monkeypatch.setenv("PRIMUS_TEST_API_KEY", "abcdef123456")
    shown = exp.redacted()
    assert shown["modules"]["pre_trainer"]["params"]["wandb_project"] == "team-***"
    assert exp.raw["modules"]["pre_trainer"]["params"]["wandb_project"] == "team-abcdef123456"


def test_loading_imports_no_upstream_framework():
    code = (
        "import sys; from primus.config import load_experiment; "
        f"load_experiment({str(TINY)!r}); "
        "print(sorted(m for m in ('megatron', 'torch', 'torchtitan', 'mlflow', 'wandb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_module_block_needs_framework_and_config(tmp_path):
    exp_file = write(tmp_path / "e.yaml",
                     "modules:\n  a: {framework: megatron}\n  b: {config: x.yaml, model: '${NOPE}'}\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(exp_file, environ={})
    problems = err.value.problems
    assert len(problems) == 3
    assert "b.model: ${NOPE} is not set" in problems[0]
    assert problems[1].startswith("modules.a.config: missing; name a module preset")
    assert problems[2] == ("modules.b.framework: missing; name the backend: megatron | torchtitan | maxtext | "
                           "megatron_bridge")
