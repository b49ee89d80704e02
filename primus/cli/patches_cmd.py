"""`primus patches`: every registered patch, the upstream releases it was written for, the upstream
version found in the code Python would import (and whether that is a wheel or a source tree), and whether
the patch would apply here (selection, version, condition with an empty config)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass

from primus.cli.upstream_lines import format_row, upstream_rows
from primus.patches import REGISTRY, Patch
from primus.patches.catalog import load_all
from primus.patches.registry import Selection


@dataclass(frozen=True)
class PatchRow:
    id: str
    backend: str
    target: str
    distribution: str | None
    versions: str  # the patch's own range; the upstream's whole supported range when it has none
    installed: str | None  # the version found in the code Python would import
    where: str  # "wheel <dir>" | "source tree <dir>" | "not importable" | "" (no version check)
    would_apply: bool
    reason: str
    description: str


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "patches", help="list the registered patches and whether they would apply", description=__doc__
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list instead of a table, e.g. primus patches --json | jq '.[].id'",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        load_all()
        selection = REGISTRY.selection()
    except ValueError as e:
        print(f"primus patches: {e}", file=sys.stderr)
        return 2
    rows = [patch_row(patch, selection) for patch in REGISTRY.patches()]
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        print("\n".join(format_row(row) for row in upstream_rows()) + "\n")
        print(_table(rows))
    return 0


def patch_row(patch: Patch, selection: Selection) -> PatchRow:
    verdict = REGISTRY.eligibility(patch)
    if patch.id not in selection:
        reason = "not selected (PRIMUS_PATCHES / PRIMUS_DISABLE_PATCHES)"
    else:
        reason = verdict.problem or verdict.skip or ""
    upstream = patch.upstream
    versions = patch.versions or (upstream.supported if upstream else "")
    return PatchRow(
        patch.id,
        patch.backend,
        patch.target,
        upstream.distribution if upstream else None,
        versions,
        verdict.version,
        verdict.where,
        not reason,
        reason,
        patch.description,
    )


def _table(rows: list[PatchRow]) -> str:
    if not rows:
        return "no patches registered"
    header = ("ID", "BACKEND", "TARGET", "SUPPORTS", "INSTALLED", "APPLIES")
    cells = [header] + [
        (
            r.id,
            r.backend,
            r.target,
            f"{r.distribution or '-'}{r.versions}",
            r.installed or "-",
            "yes" if r.would_apply else f"no: {r.reason}",
        )
        for r in rows
    ]
    widths = [*(max(len(row[i]) for row in cells) for i in range(len(header) - 1)), 0]  # the last one unpadded
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
