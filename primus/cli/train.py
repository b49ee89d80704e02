"""`primus train --config EXP.yaml [key=value ...]`: run an experiment with tracking on."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from primus.config import ConfigError, load_experiment
from primus.launch.local import plan_local_launch, select_module
from primus.launch.results import describe_results


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("train", help="run an experiment (upstream trainer, patches active)",
                              description=__doc__)
    p.add_argument("--config", required=True, metavar="EXP.yaml", help="experiment YAML")
    p.add_argument("--module", default=None, help="module to run when the experiment has several")
    p.add_argument("--nproc-per-node", type=int, default=1, help="processes on this node (torchrun when > 1)")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, typed by the schema")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(args.config, args.overrides)
        module = select_module(exp, args.module)
        plan = plan_local_launch(exp, module, args.overrides, args.nproc_per_node)
    except (ConfigError, ValueError) as e:
        print(f"primus train: {e}", file=sys.stderr)
        return 2
    print(f"[primus] run directory: {plan.run_dir}", flush=True)
    print(f"[primus] command: {shlex.join(plan.argv)}", flush=True)
    if args.dry_run:
        return 0
    code = subprocess.call(plan.argv, env=plan.env)
    print(describe_results(plan.run_dir), flush=True)
    return code
