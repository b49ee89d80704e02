"""`primus` command: one sub-command per module in primus/cli/, each exposing ``add_parser``."""

from __future__ import annotations

import argparse
import importlib
import sys

# sub-command name -> module under primus.cli defining add_parser(subparsers) that sets func=
SUBCOMMANDS = {
    "config": "config_cmd",
    "doctor": "doctor",
    "patches": "patches_cmd",
    "report": "report_cmd",
    "tracking": "tracking_cmd",
    "train": "train",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="primus", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS.values():
        importlib.import_module(f"primus.cli.{module}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
