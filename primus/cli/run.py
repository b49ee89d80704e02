"""`primus-run [--config EXP.yaml] COMMAND [ARGS...]`: run any command with Primus's patches active.

Like ddtrace-run: the environment gets the bootstrap ``sitecustomize`` first on PYTHONPATH and
PRIMUS_ACTIVATE=1, then the command replaces this process (os.execve). A command that is not on PATH but
lies beside primus-run's own interpreter (``.venv/bin/torchrun`` with the environment not activated) is run
from there, and primus-run says so. Every Python it starts,
torchrun workers included, inherits the environment and activates the patches at start-up.
Interpreters started with -I, -E or -S ignore PYTHONPATH or site, and run unpatched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from primus.activation import activation_env
from primus.patches import REGISTRY
from primus.patches.catalog import load_all


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="primus-run",
        usage="primus-run [--config EXP.yaml] COMMAND [ARGS...]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        metavar="EXP.yaml",
        help="experiment YAML; its absolute path reaches the command as PRIMUS_CONFIG, "
        "e.g. --config configs/torchtitan/llama3_debug_cpu.yaml",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="the command to run and its arguments, e.g. torchrun --nproc_per_node 8 pretrain_gpt.py ...",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given; example: primus-run torchrun --nproc_per_node 2 pretrain_gpt.py ...")
    if args.config is not None and not Path(args.config).is_file():
        parser.error(f"--config {args.config!r}: no such file; give the path of an experiment YAML")
    try:
        # Check PRIMUS_PATCHES / PRIMUS_DISABLE_PATCHES here, where an error is a clean message and
        # not a failure inside every child interpreter's start-up.
        load_all()
        REGISTRY.selection()
    except ValueError as e:
        parser.error(str(e))
    env = activation_env(os.environ, config=args.config)
    executable = find_command(command[0], env.get("PATH", os.defpath))
    if executable is None:
        print(
            f"primus-run: command not found: {command[0]!r} (looked on PATH and in {interpreter_bin()})",
            file=sys.stderr,
        )
        return 127
    sys.stdout.flush()
    try:
        os.execve(executable, command, env)
    except FileNotFoundError:
        print(f"primus-run: command not found: {command[0]!r}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"primus-run: permission denied: {command[0]!r}", file=sys.stderr)
        return 126


def interpreter_bin() -> Path:
    """The folder of the interpreter running primus-run (a virtual environment's bin/, unresolved)."""
    return Path(sys.executable).parent


def find_command(name: str, path: str) -> str | None:
    """``name`` as the shell would find it on ``path``; else the same name beside this interpreter."""
    if os.sep in name:
        return name
    found = shutil.which(name, path=path)
    if found is not None:
        return found
    beside = interpreter_bin() / name
    if beside.is_file() and os.access(beside, os.X_OK):
        print(f"primus-run: {name} is not on PATH; running {beside} (beside primus-run's interpreter)", file=sys.stderr)
        return str(beside)
    return None


if __name__ == "__main__":
    sys.exit(main())
