"""The longer explanations of primus/tracking's modules are in docs/tracking-internals.md, whose every section names
modules that exist (their docstrings' length: tests/test_docstrings.py)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACKING = ROOT / "primus" / "tracking"
INTERNALS = ROOT / "docs" / "tracking-internals.md"


def test_the_internals_page_names_modules_that_exist():
    named = set(re.findall(r"`(\w+/\w+\.py)`", INTERNALS.read_text(encoding="utf-8")))
    # a tracking module by its path in primus/tracking, or a file of the repository by its own (benchmarks/...)
    assert named and sorted(p for p in named if not ((TRACKING / p).is_file() or (ROOT / p).is_file())) == []
