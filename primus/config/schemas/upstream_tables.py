"""Generated tables of upstream config fields (TorchTitan's dataclasses, MaxText's pydantic model), one file per
upstream minor release: ``primus/configs/schemas/<backend>_<major>.<minor>.yaml``. Each maps a dotted field
name to its type expression (``type_expressions``), upstream's default where YAML can write it, and its help.

Validation reads the table of the release installed here (found as `primus doctor` finds it, without importing
upstream), else the newest table: the launching host may not have the trainer (a container, a Slurm job
elsewhere), and its config is then checked against the newest release Primus knows.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from primus.config import yaml12
from primus.config.paths import SCHEMA_TABLES_DIR
from primus.config.schema import Param

_MINOR = re.compile(r"^(\d+)\.(\d+)")


def minor(version: str) -> str:
    """``0.3`` for ``0.3.0``, ``0.3.1.dev2``."""
    match = _MINOR.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not a release number")
    return f"{match.group(1)}.{match.group(2)}"


def table_path(backend: str, version: str) -> Path:
    return SCHEMA_TABLES_DIR / f"{backend}_{minor(version)}.yaml"


def tables(backend: str) -> dict[tuple[int, ...], Path]:
    """Every checked-in table of ``backend``, by (major, minor)."""
    found = {}
    for path in SCHEMA_TABLES_DIR.glob(f"{backend}_*.yaml"):
        release = path.stem.removeprefix(f"{backend}_")
        if _MINOR.fullmatch(release):
            found[tuple(int(part) for part in release.split("."))] = path
    return dict(sorted(found.items()))


def installed(upstream: Any) -> str | None:
    """The release of ``upstream`` (a ``primus.upstreams.release.Upstream``) Python would import here, read from
    its files without importing it; None when it is not installed."""
    from primus.upstreams.release import locate

    return locate(upstream).version


def release_to_tabulate(upstream: Any) -> str:
    """The release a generator is tabulating: the code imported (a source checkout's own version), not the
    installed distribution's metadata."""
    release = installed(upstream)
    if release is None:
        raise SystemExit(f"cannot tell which {upstream.distribution} release is installed here: see `primus doctor`")
    return release


def select(backend: str, version: str | None) -> Path:
    """The table of ``version`` (the release installed here), else the newest one."""
    available = tables(backend)
    if not available:
        raise FileNotFoundError(f"no {backend} schema table in {SCHEMA_TABLES_DIR}")
    if version is not None and _MINOR.match(version):
        wanted = tuple(int(part) for part in minor(version).split("."))
        if wanted in available:
            return available[wanted]
    return list(available.values())[-1]


@functools.cache
def load(path: Path) -> dict[str, Any]:
    return yaml12.load_file(path)


def params(path: Path) -> list[Param]:
    """One upstream Param per field of the table, typed by its annotation."""
    return [
        Param(name, "any", default=entry.get("default"), annotation=entry["type"], help=entry.get("help", ""))
        for name, entry in load(path)["fields"].items()
    ]


def render(header: str, table: dict[str, Any]) -> str:
    return header + yaml.safe_dump(table, sort_keys=False, default_flow_style=False, width=200, allow_unicode=True)


def main(
    argv: list[str] | None, description: str, build_table: Callable[[], dict[str, Any]], backend: str, header: str
) -> int:
    """The command line of a table generator: write the table of the release installed here, or ``--check``
    it against the checked-in one."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare with the checked-in table, write nothing")
    opts = parser.parse_args(argv)
    table = build_table()
    release = table[backend]
    return write_or_check(table_path(backend, release), render(header, table), opts.check, f"{backend} {release}")


def write_or_check(path: Path, text: str, check: bool, upstream: str) -> int:
    """Write the table (0), or with ``check`` compare it with the checked-in one: 1 and a diff when they differ."""
    if not check:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    checked_in = path.read_text(encoding="utf-8") if path.is_file() else ""
    if checked_in == text:
        return 0
    diff = difflib.unified_diff(checked_in.splitlines(), text.splitlines(), "checked in", "upstream", lineterm="")
    print(f"{path} differs from the installed {upstream}; regenerate it:", file=sys.stderr)
    print("\n".join(list(diff)[:40]), file=sys.stderr)
    return 1


def plain_default(value: Any) -> tuple[bool, Any]:
    """(True, value) when YAML can write upstream's default as it is (scalars and lists/dicts of them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True, value
    if isinstance(value, (list, tuple)):
        items = [plain_default(v) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        entries = {k: plain_default(v) for k, v in value.items()}
        return all(ok for ok, _ in entries.values()), {k: v for k, (_, v) in entries.items()}
    return False, None


def entry(type_expression: str, default: tuple[bool, Any], help_text: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"type": type_expression}
    if default[0]:
        row["default"] = default[1]
    if help_text:
        row["help"] = " ".join(help_text.split())
    return row
