"""`primus doctor`: what this environment runs (the upstream trainers as Python would import them: version,
wheel or source tree, supported or not), whether a GPU is visible, and whether the installed upstream files
are the ones their wheels shipped. Exits 1 when an upstream trainer is outside the supported range, when an
upstream file was modified or is missing, when a plugin (an entry point in primus.sinks or primus.patches) does
not load or a tracker PRIMUS_SINKS names is not there, or when a distribution asked for with --dist is not
installed.
Whether Comet finds an API key is said (where from, never the key), as comet_ml looks it up, and which One-Logger
is present (Megatron's legacy package, NVIDIA's public nv-one-logger, none) with what a run records.
While it hashes, a progress line goes to stderr every few seconds; --json prints one JSON object instead."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
from dataclasses import asdict
from functools import partial

from primus.cli.plugin_lines import format_plugin_lines, plugin_rows, requested_sinks_problem
from primus.cli.upstream_lines import format_row, upstream_rows
from primus.patches.integrity import IntegrityReport, verify_distribution
from primus.tracking.settings.one_logger_presence import one_logger_present, what_a_run_records
from primus.upstreams.release import SOURCE_TREE, UPSTREAM_CHECK_ENV, WHEEL, upstream_check

REPORTED_DISTRIBUTIONS = ("torch", "wandb", "mlflow", "comet_ml", "tensorboard", "wrapt")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="versions, GPU, and upstream files unmodified", description=__doc__)
    parser.add_argument(
        "--dist",
        action="append",
        default=[],
        metavar="NAME",
        help="also verify this installed distribution against its RECORD (repeatable), e.g. --dist torch",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (versions, trainers, GPU, integrity, ok) for a CI job to parse, "
        "e.g. primus doctor --json | jq .ok",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    say = (lambda text: None) if args.json else print
    say(f"{'python':<14}{platform.python_version()} ({sys.executable})")
    try:
        check, check_problem = upstream_check(), ""
    except ValueError as e:
        check, check_problem = None, str(e)
    say(f"{'upstreams':<14}{check_problem or f'{UPSTREAM_CHECK_ENV}={check}'}")
    trainers, declarations_problem = [], ""
    try:
        if not check_problem:
            trainers = upstream_rows()
    except ValueError as e:  # a patch plugin that cannot be loaded (the plugins below say which)
        declarations_problem = str(e)
        say(f"upstream trainers not listed: the patch declarations do not load: {e}")
    for row in trainers:
        say(format_row(row))
    versions = {name: _version(name) for name in REPORTED_DISTRIBUTIONS}
    for name, found in versions.items():
        say(f"{name:<14}{found or 'not installed'}")
    comet_key = _comet_key(installed=versions["comet_ml"] is not None)
    say(f"{'comet key':<14}{comet_key}")
    one_logger = {"present": one_logger_present()}
    one_logger["records"] = what_a_run_records(one_logger["present"])
    say(f"{'one-logger':<14}{one_logger['records']}")
    gpu = _gpu()
    say(f"{'gpu':<14}{gpu}")
    plugins = plugin_rows()
    sinks_problem = requested_sinks_problem()
    say("plugins (entry points):")
    for line in format_plugin_lines(plugins):
        say(line)
    say("upstream files (wheel RECORD hashes):")
    ok = (
        not any(row.path and row.problem for row in trainers)
        and not declarations_problem
        and not check_problem
        and not sinks_problem
        and not any(row.problem for row in plugins)
    )
    for row in trainers:
        if row.origin == SOURCE_TREE:
            say(f"  {row.distribution}: a source tree ({row.path}): no wheel RECORD to check it against")
    wheels = [row.distribution for row in trainers if row.origin == WHEEL]
    reports: dict[str, IntegrityReport | None] = {}
    for name in dict.fromkeys([*wheels, *args.dist]):  # ordered, without repeats
        try:
            report = reports[name] = verify_distribution(name, progress=partial(_progress_line, name))
        except importlib.metadata.PackageNotFoundError:
            reports[name] = None
            say(f"  {name}: not installed")
            ok = ok and name not in args.dist
            continue
        say("  " + _describe(report))
        ok = ok and report.clean
    if args.json:
        print(
            json.dumps(
                {
                    "python": {"version": platform.python_version(), "executable": sys.executable},
                    "upstream_check": check or check_problem,
                    "upstreams": [asdict(row) for row in trainers],
                    "distributions": versions,
                    "comet_api_key": comet_key,
                    "one_logger": one_logger,
                    "gpu": gpu,
                    "declarations_problem": declarations_problem,
                    "plugins": [asdict(row) for row in plugins],
                    "requested_sinks_problem": sinks_problem,
                    "integrity": {
                        name: report and {**asdict(report), "clean": report.clean} for name, report in reports.items()
                    },
                    "ok": ok,
                },
                indent=2,
            )
        )
    return 0 if ok else 1


def _progress_line(name: str, hashed: int, total: int) -> None:
    print(f"  {name}: {hashed} of {total} files hashed ...", file=sys.stderr, flush=True)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _comet_key(installed: bool) -> str:
    """Where comet_ml finds its API key, never the key: an online Comet run fails without one."""
    if not installed:
        return "not checked (comet_ml is not installed)"
    from primus.tracking.trackers.comet import NO_API_KEY_FIX, api_key_found

    if not api_key_found():
        return f"none (Comet online needs one: {NO_API_KEY_FIX})"
    return "present (COMET_API_KEY)" if os.environ.get("COMET_API_KEY") else "present (comet_ml's config file)"


def _gpu() -> str:
    try:
        import torch
    except ImportError:
        return "unknown (torch not installed)"
    if not torch.cuda.is_available():
        return "none (torch.cuda.is_available() is False)"
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return f"{torch.cuda.device_count()} x {', '.join(names)}"


def _describe(report: IntegrityReport) -> str:
    head = f"{report.distribution} {report.version}:"
    if report.unverifiable:
        return f"{head} cannot verify: {report.unverifiable}"
    if report.clean:
        return f"{head} clean ({report.checked} files)"
    lines = [f"{head} {len(report.modified)} modified, {len(report.missing)} missing of {report.checked} files"]
    lines += [f"    modified: {path}" for path in report.modified]
    lines += [f"    missing:  {path}" for path in report.missing]
    return "\n".join(lines)
