"""`primus monitoring rules [--stall-after SECONDS]`: Prometheus alerting rules for runs that push to a Pushgateway
(PRIMUS_PROMETHEUS_PUSHGATEWAY), as a rules file on stdout; `primus monitoring dashboard`: a Grafana dashboard of
them, as JSON on stdout. README, "Your cluster's monitoring", says how to wire both."""

from __future__ import annotations

import argparse
import json
import math


def add_parser(subparsers) -> None:
    from primus.monitoring.rules import DEFAULT_STALL_AFTER_S

    parser = subparsers.add_parser(
        "monitoring", help="Prometheus alerting rules and a Grafana dashboard for pushed runs", description=__doc__
    )
    sub = parser.add_subparsers(dest="what", required=True)
    rules = sub.add_parser("rules", help="print the alerting rules (a Prometheus rules file)")
    rules.add_argument(
        "--stall-after",
        type=_seconds,
        default=DEFAULT_STALL_AFTER_S,
        metavar="SECONDS",
        help=f"PrimusRunStalled fires when a run logged no step for this long (default {DEFAULT_STALL_AFTER_S:g}); "
        "above your longest normal gap between log steps (a checkpoint save, an evaluation), e.g. 1800",
    )
    rules.set_defaults(func=_rules)
    dashboard = sub.add_parser("dashboard", help="print the Grafana dashboard (JSON, for Grafana's import)")
    dashboard.set_defaults(func=_dashboard)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"--stall-after={text!r} is not valid: give a positive number of seconds, e.g. 900"
        )
    return value


def _rules(args: argparse.Namespace) -> int:
    from primus.monitoring.rules import rules_yaml

    print(rules_yaml(args.stall_after), end="")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from primus.monitoring.dashboard import dashboard

    print(json.dumps(dashboard(), indent=2))
    return 0
