"""`primus` command: one sub-command per module in primus/cli/, each exposing ``add_parser``.

``key=value`` overrides may stand anywhere on the line of a sub-command that takes them (``primus train
--config x.yaml a=1 --nproc-per-node 2 b=2``): argparse takes the first run of them, the rest are added in order."""

from __future__ import annotations

import argparse
import importlib
import sys

# sub-command name -> module under primus.cli defining add_parser(subparsers) that sets func=
SUBCOMMANDS = {
    "config": "config_cmd",
    "doctor": "doctor",
    "monitoring": "monitoring_cmd",
    "patches": "patches_cmd",
    "report": "report_cmd",
    "tracking": "tracking_cmd",
    "train": "train",
}


class _VersionAction(argparse.Action):
    """Primus's version, then the upstream trainers found (as `primus doctor` starts); nothing heavy imported."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from primus import DISTRIBUTION, __version__
        from primus.cli.upstream_lines import format_row, upstream_rows

        print(f"{DISTRIBUTION} {__version__}")
        for row in upstream_rows(count_patches=False):
            print(format_row(row))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="primus", description=__doc__)
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print primus's version and the upstream trainers found, e.g. primus --version",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS.values():
        importlib.import_module(f"primus.cli.{module}").add_parser(sub)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    overrides = [a for a in extra if "=" in a and not a.startswith("-")]
    rest = [a for a in extra if a not in overrides]
    if rest or (overrides and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(rest or overrides)}")
    if overrides:
        args.overrides = [*args.overrides, *overrides]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
