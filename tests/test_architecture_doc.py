"""docs/how-a-metric-travels.md names a file for every hop a metric takes: each must exist, and every module
that carries a metric from upstream to a tracker must be named, so the page cannot fall behind a rename."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "how-a-metric-travels.md"
HOPS = (
    "patches/arguments.py",
    "patches/registry.py",
    "patches/handle.py",
    "tracking/plan.py",
    "tracking/run.py",
    "tracking/hub.py",
    "tracking/journal/reader.py",
    "tracking/journal/writer.py",
    "tracking/delivery/worker.py",
    "tracking/delivery/process.py",
    "tracking/delivery/child.py",
    "tracking/trackers/mlflow.py",
    "tracking/delivery/replay.py",
)


def named_paths(text: str) -> set[str]:
    """The paths under primus/ the page names (`folder/module.py`)."""
    return set(re.findall(r"`(\w[\w/]*/\w+\.py)`", text))


def test_every_file_the_page_names_exists():
    named = named_paths(DOC.read_text())
    missing = sorted(p for p in named if not (ROOT / "primus" / p).is_file())
    assert named and missing == [], f"{DOC.name} names files that do not exist under primus/: {missing}"


def test_the_page_names_every_hop():
    named = named_paths(DOC.read_text())
    assert [hop for hop in HOPS if hop not in named] == []
    for backend in ("megatron", "torchtitan", "maxtext"):
        assert any(p.startswith(f"backends/{backend}/patches/") for p in named), backend
