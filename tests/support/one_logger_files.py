"""Reading back what nv-one-logger's file exporter wrote for a run: ``<run_dir>/one_logger/attempt-<n>.jsonl``, one
JSON record per line (``start``/``stop``/``complete`` of a span, ``event`` on one)."""

from __future__ import annotations

import json
from pathlib import Path


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def attempts(run_dir: Path) -> dict[str, list[dict]]:
    """Each attempt's records, by file name, in attempt order."""
    files = sorted((run_dir / "one_logger").glob("attempt-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
    return {p.name: records(p) for p in files}


def name_of(record: dict) -> str:
    return record.get("name") or record["event"]["name"]


def named(recs: list[dict], kind: str, name: str) -> list[dict]:
    """The records of ``kind`` (start, stop, complete, event) named ``name`` (a span's, or an event's)."""
    return [r for r in recs if r["type"] == kind and name_of(r) == name]


def attrs(record: dict) -> dict:
    return record.get("attributes") or record["event"]["attributes"]


def outline(recs: list[dict]) -> list[tuple[str, str]]:
    """(type, name) of each record: what two writes of one attempt share."""
    return [(r["type"], name_of(r)) for r in recs]
