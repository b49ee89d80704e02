"""A run's journal read the plain way (json and gzip, not the code under test): the segments under
``<run_dir>/journal/`` in name order, or an older run directory's single ``journal.jsonl``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def segment_files(run_dir: Path) -> list[Path]:
    folder = run_dir / "journal"
    if folder.is_dir():
        return sorted(p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    legacy = run_dir / "journal.jsonl"
    return [legacy] if legacy.is_file() else []


def journal_lines(run_dir: Path, skip_torn: bool = False) -> list[dict[str, Any]]:
    """Every journal line as a dict, in order; ``skip_torn``: leave out a line still being written."""
    records = []
    for path in segment_files(run_dir):
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        for line in data.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                if not skip_torn:
                    raise
    return records


def run_dirs_under(root: Path) -> list[Path]:
    """The run directories (those holding a journal) anywhere under ``root``."""
    return sorted({p.parent for p in root.rglob("journal") if p.is_dir()} |
                  {p.parent for p in root.rglob("journal.jsonl")})


def without_goodput(data: dict[str, Any]) -> dict[str, Any]:
    """A metrics record's data less the goodput figures every tracked run adds to each log step's record."""
    from primus.tracking.goodput.accounting import NAMES

    return {name: value for name, value in data.items() if name not in NAMES}
