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
