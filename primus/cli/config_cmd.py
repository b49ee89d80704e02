"""``primus config show|validate EXP.yaml [key=value ...]``: print the resolved config (redacted),
or check it and list every problem."""

from __future__ import annotations

import argparse
import sys

import yaml

from primus.config import ConfigError, load_experiment


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="show or validate an experiment config")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, func, about in (
        ("show", _show, "print the resolved config as YAML, secrets hidden"),
        ("validate", _validate, "exit 0 when the config is valid, else list every problem"),
    ):
        sub = actions.add_parser(name, help=about, description=about)
        sub.add_argument("experiment", help="experiment YAML file")
        sub.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. train_iters=5 workspace=/tmp/x")
        sub.set_defaults(func=func)


def _show(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(args.experiment, args.overrides)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    yaml.safe_dump(exp.redacted(), sys.stdout, sort_keys=False, default_flow_style=False)
    return 0


def _validate(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(args.experiment, args.overrides)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    modules = ", ".join(f"{name} ({m.framework}, {len(m.params)} parameters)" for name, m in exp.modules.items())
    print(f"{exp.source}: valid: {modules}")
    return 0
