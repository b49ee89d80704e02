"""``primus config show|validate --config EXP.yaml [key=value ...]``: print the resolved config (redacted), or
check it and list every problem; ``primus config schema --framework NAME``: a JSON Schema of the experiment file,
for an editor to complete and check keys.

The experiment is given with ``--config`` as in `primus train` and `primus-run`; the older positional spelling
(``primus config validate EXP.yaml``) still works, with a note."""

from __future__ import annotations

import argparse
import json
import sys

import yaml

from primus.config import ConfigError, load_experiment
from primus.config.schemas import FRAMEWORKS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="show, validate or describe an experiment config", description=__doc__
    )
    actions = parser.add_subparsers(dest="action", required=True)
    for name, func, about in (
        ("show", _show, "print the resolved config as YAML, secrets hidden"),
        ("validate", _validate, "exit 0 when the config is valid, else list every problem"),
    ):
        sub = actions.add_parser(name, help=about, description=about)
        sub.add_argument(
            "--config", metavar="EXP.yaml", help="the experiment file, e.g. --config configs/megatron/tiny_cpu.yaml"
        )
        sub.add_argument(
            "overrides",
            nargs="*",
            metavar="key=value",
            help="config overrides, typed by the schema, e.g. train_iters=5 workspace=/tmp/x",
        )
        if name == "validate":
            sub.add_argument(
                "--json",
                action="store_true",
                help='print {"valid": ..., "problems": [...], "modules": {...}} for a CI job, '
                "e.g. primus config validate --config exp.yaml --json | jq .valid",
            )
        sub.set_defaults(func=func)
    schema = actions.add_parser(
        "schema",
        help="write a JSON Schema of the experiment file (for editors)",
        description="A JSON Schema (draft 2020-12) of an experiment file whose modules use "
        "one backend: every key with its type, default and help.",
    )
    schema.add_argument(
        "--framework",
        required=True,
        choices=FRAMEWORKS,
        help="the backend whose parameters the modules take, e.g. --framework torchtitan",
    )
    schema.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default=None,
        help="write it to FILE instead of stdout, e.g. -o .vscode/primus-megatron.schema.json",
    )
    schema.set_defaults(func=_schema)


def _experiment(args: argparse.Namespace) -> str:
    """``--config``, else the first positional argument (the old spelling), with a note."""
    if args.config is not None:
        return args.config
    if args.overrides and "=" not in args.overrides[0]:
        path, args.overrides = args.overrides[0], args.overrides[1:]
        print(
            f"primus config {args.action}: the experiment as a positional argument is deprecated; write "
            f"--config {path}",
            file=sys.stderr,
        )
        return path
    print(
        f"primus config {args.action}: give the experiment file, e.g. --config configs/megatron/tiny_cpu.yaml",
        file=sys.stderr,
    )
    raise SystemExit(2)


def _show(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(_experiment(args), args.overrides)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    yaml.safe_dump(exp.redacted(), sys.stdout, sort_keys=False, default_flow_style=False)
    return 0


def _validate(args: argparse.Namespace) -> int:
    path = _experiment(args)
    try:
        exp = load_experiment(path, args.overrides)
    except ConfigError as e:
        if args.json:
            print(json.dumps({"experiment": path, "valid": False, "problems": e.problems}, indent=2))
        else:
            print(e, file=sys.stderr)
        return 1
    if args.json:
        summary = {name: {"framework": m.framework, "parameters": len(m.params)} for name, m in exp.modules.items()}
        print(json.dumps({"experiment": str(exp.source), "valid": True, "problems": [], "modules": summary}, indent=2))
        return 0
    modules = ", ".join(f"{name} ({m.framework}, {len(m.params)} parameters)" for name, m in exp.modules.items())
    print(f"{exp.source}: valid: {modules}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from primus.config.json_schema import experiment_schema

    text = json.dumps(experiment_schema(args.framework), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
