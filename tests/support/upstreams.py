"""The alternate upstream releases of third_party/upstream-matrix.txt, installed by `make setup` into
<venv>/upstreams/<distribution>-<version>: a test runs one by putting its folder first on PYTHONPATH."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "third_party" / "upstream-matrix.txt"


def matrix() -> list[tuple[str, str, str]]:
    """(environment, distribution, version) for each alternate release."""
    rows = []
    for line in MATRIX.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            venv, requirement = line.split()
            distribution, version = requirement.split("==")
            rows.append((venv, distribution, version))
    return rows


def releases(distribution: str) -> list[str]:
    return [version for _, dist, version in matrix() if dist == distribution]


def upstream_path(distribution: str, version: str) -> Path:
    """The folder to put first on PYTHONPATH to run ``distribution`` ``version``."""
    [venv] = [v for v, dist, ver in matrix() if (dist, ver) == (distribution, version)]
    folder = ROOT / venv / "upstreams" / f"{distribution}-{version}"
    if not (folder / ".installed").exists():
        raise AssertionError(f"{folder} is not built: `make setup` (scripts/setup-upstream-matrix.sh) installs it")
    return folder


def upstream_env(distribution: str, version: str) -> dict[str, str]:
    """The environment entries that make a run import ``distribution`` ``version``."""
    return {"PYTHONPATH": str(upstream_path(distribution, version))}
