"""An experiment's MaxText parameters become MaxText's own key=value arguments: after the program and the
config file, before the command line's (which win), typed so upstream's YAML parser reads them back."""

from __future__ import annotations

from pathlib import Path

from primus.backends.maxtext.upstream_argv import with_experiment
from primus.config.yaml12 import parse_scalar

PARAMS = {"steps": 20, "learning_rate": 1e-05, "run_name": "1e3", "enable_mlflow": True, "mlflow_run_name": None,
          "logical_axis_rules": [["batch", ["data", "fsdp"]]], "dataset_path": "a b=c"}


def test_settings_go_between_the_config_file_and_the_command_line():
    argv = with_experiment(["train.py", "my.yml", "steps=3"], PARAMS, None)
    assert argv[:2] == ["train.py", "my.yml"] and argv[-1] == "steps=3"
    # upstream's OmegaConf reads values as YAML with 1.2-style floats (1e-05), as parse_scalar does
    typed = {item.split("=", 1)[0]: parse_scalar(item.split("=", 1)[1]) for item in argv[2:-1]}
    assert typed == PARAMS  # each value keeps its type: "1e3" stays a string, 1e-05 a float


def test_without_a_config_file_settings_follow_the_program_and_the_run_directory_places_maxtext():
    argv = with_experiment(["train.py", "steps=3"], {"steps": 20}, Path("/runs/exp/20260101-000000"))
    assert argv == ["train.py", 'base_output_directory="/runs/exp"', 'run_name="20260101-000000"', "steps=20",
                    "steps=3"]
    named = with_experiment([""], {"run_name": "mine"}, Path("/runs/exp/t"))
    assert named == ["", 'base_output_directory="/runs/exp"', 'run_name="mine"']  # the experiment's own wins


PRESET_ONLY = frozenset({"log_period", "enable_tensorboard", "enable_wandb"})
EXPERIMENT = {"log_period": 100, "enable_tensorboard": False, "enable_wandb": False, "steps": 20}


def configs(tmp_path: Path, **files: str) -> Path:
    """A configs folder like MaxText's: its own base.yml sets every key, as upstream's does."""
    folder = tmp_path / "maxtext_configs"
    folder.mkdir()
    (folder / "base.yml").write_text("log_period: 100\nenable_tensorboard: true\nenable_wandb: false\nsteps: 150\n")
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def passed(argv: list[str]) -> dict[str, object]:
    return {item.split("=", 1)[0]: parse_scalar(item.split("=", 1)[1]) for item in argv[2:]}


def test_the_users_config_chain_wins_over_the_presets_defaults_but_not_over_the_experiment(tmp_path):
    folder = configs(tmp_path, **{"shared.yml": "base_config: base.yml\nenable_wandb: true\n"})
    (tmp_path / "parent.yml").write_text("base_config: shared.yml\nlog_period: 7\n")
    (tmp_path / "my.yml").write_text("base_config: parent.yml\nsteps: 50\n")
    argv = with_experiment(["train.py", str(tmp_path / "my.yml")], EXPERIMENT, None, PRESET_ONLY, str(folder))
    # log_period from a parent beside the file, enable_wandb from one in MaxText's folder: the file's values
    # stay; enable_tensorboard, which only upstream's base.yml sets, is the preset's; steps, the experiment's
    assert passed(argv) == {"enable_tensorboard": False, "steps": 20}


def test_a_parent_beside_the_file_comes_before_one_of_the_same_name_in_maxtexts_folder(tmp_path):
    folder = configs(tmp_path, **{"parent.yml": "log_period: 3\n"})
    (tmp_path / "parent.yml").write_text(f"base_config: {folder / 'base.yml'}\nenable_wandb: true\n")
    (tmp_path / "my.yml").write_text("base_config: parent.yml\n")
    argv = with_experiment(["train.py", str(tmp_path / "my.yml")], EXPERIMENT, None, PRESET_ONLY, str(folder))
    assert passed(argv) == {"log_period": 100, "enable_tensorboard": False, "steps": 20}


def test_upstreams_own_config_and_no_config_leave_every_preset_default_in_place(tmp_path):
    folder = configs(tmp_path)
    every_key = ["log_period=100", "enable_tensorboard=false", "enable_wandb=false", "steps=20"]
    upstreams = ["train.py", str(folder / "base.yml")]
    assert with_experiment(upstreams, EXPERIMENT, None, PRESET_ONLY, str(folder)) == [*upstreams, *every_key]
    assert with_experiment(["train.py", "steps=3"], EXPERIMENT, None, PRESET_ONLY, str(folder)) == [
        "train.py", *every_key, "steps=3"]


def test_a_file_named_in_a_maxtext_checkout_resolves_to_the_installed_configs(tmp_path, monkeypatch):
    folder = configs(tmp_path, **{"mine.yml": "base_config: base.yml\nlog_period: 9\n"})
    monkeypatch.chdir(tmp_path)  # no src/ here: upstream maps the path to its configs folder
    argv = with_experiment(["train.py", "src/maxtext/configs/mine.yml"], EXPERIMENT, None, PRESET_ONLY, str(folder))
    assert "log_period" not in passed(argv)


def test_a_chain_that_loops_or_names_a_missing_parent_ends_there(tmp_path):
    folder = configs(tmp_path)
    (tmp_path / "a.yml").write_text("base_config: b.yml\nlog_period: 7\n")
    (tmp_path / "b.yml").write_text("base_config: a.yml\nenable_wandb: true\n")
    (tmp_path / "c.yml").write_text("base_config: missing.yml\nenable_tensorboard: true\n")
    looped = with_experiment(["train.py", str(tmp_path / "a.yml")], EXPERIMENT, None, PRESET_ONLY, str(folder))
    # upstream, loading the same chain next, reports the loop
    assert passed(looped) == {"enable_tensorboard": False, "steps": 20}
    missing = with_experiment(["train.py", str(tmp_path / "c.yml")], EXPERIMENT, None, PRESET_ONLY, str(folder))
    assert passed(missing) == {"log_period": 100, "enable_wandb": False, "steps": 20}
