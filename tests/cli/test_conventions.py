"""Conventions every `primus` command keeps: --version (without importing a trainer), key=value overrides
anywhere on the line, the experiment given as --config everywhere (the old positional spelling still works, with
a note), help with an example on every flag, --json where a CI job parses the output."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import primus
from primus.cli.main import build_parser, main
from primus.cli.run import build_parser as run_parser

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "configs/megatron/tiny_cpu.yaml")


def test_version_names_primus_and_the_upstream_trainers_without_importing_them():
    code = ("import sys\nfrom primus.cli.main import main\ntry:\n    main(['--version'])\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None)\n"
            "print(sorted({'torch', 'torchtitan', 'maxtext', 'jax'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[0] == f"primus-tracking {primus.__version__}"
    assert lines[1].startswith("Megatron   megatron-core 0.19.2 (wheel ")
    assert lines[2].startswith("TorchTitan torchtitan 0.3.0 (wheel ")
    assert lines[-1] == "[]"  # no trainer was imported to say so


def test_overrides_anywhere_on_the_train_line(tmp_path, capsys):
    code = main(["train", "--config", TINY, "train_iters=3", "--nproc-per-node", "2", "lr=2e-3", "--dry-run",
                 f"workspace={tmp_path}", "train_iters=4"])
    out, err = capsys.readouterr()
    assert code == 0, err
    words = shlex.split(out.split("[primus] command: ", 1)[1])
    [overrides] = [json.loads(w.split("=", 1)[1]) for w in words if w.startswith("PRIMUS_CONFIG_OVERRIDES=")]
    assert overrides[:4] == ["train_iters=3", "lr=2e-3", f"workspace={tmp_path}", "train_iters=4"]  # the last wins


def test_an_unknown_flag_is_still_refused(capsys):
    try:
        main(["train", "--config", TINY, "a=1", "--nprocs-per-node", "2"])
    except SystemExit as e:
        assert e.code == 2
    assert "unrecognized arguments: --nprocs-per-node 2" in capsys.readouterr().err


def test_the_experiment_is_given_with_config_and_the_old_spelling_still_works(capsys):
    assert main(["config", "validate", "--config", TINY, "train_iters=5"]) == 0
    captured = capsys.readouterr()
    assert "valid: pre_trainer (megatron, " in captured.out and captured.err == ""
    assert main(["config", "validate", TINY, "train_iters=5"]) == 0
    captured = capsys.readouterr()
    assert "valid: pre_trainer (megatron, " in captured.out
    assert f"the experiment as a positional argument is deprecated; write --config {TINY}" in captured.err


def test_config_validate_json_lists_every_problem(capsys):
    assert main(["config", "validate", "--config", TINY, "--json", "trian_iters=3", "lr=abc"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is False and len(result["problems"]) == 2
    assert main(["config", "validate", "--config", TINY, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is True and result["modules"]["pre_trainer"]["framework"] == "megatron"


def test_every_flag_has_help_with_an_example():
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and "e.g." not in (action.help or ""):
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "primus")
    walk(run_parser(), "primus-run")
    assert missing == []
