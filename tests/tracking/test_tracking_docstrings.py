"""Every module of primus/tracking says what it is for in at most 15 lines of docstring; the longer explanations are
in docs/tracking-internals.md, whose every section names modules that exist."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACKING = ROOT / "primus" / "tracking"
INTERNALS = ROOT / "docs" / "tracking-internals.md"
MAX_LINES = 15


def test_every_tracking_module_has_a_docstring_of_at_most_15_lines():
    lengths = {}
    for path in sorted(TRACKING.rglob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        lengths[str(path.relative_to(TRACKING))] = len(docstring.splitlines()) if docstring else 0
    assert {module: n for module, n in lengths.items() if not 0 < n <= MAX_LINES} == {}


def test_the_internals_page_names_modules_that_exist():
    named = set(re.findall(r"`(\w+/\w+\.py)`", INTERNALS.read_text(encoding="utf-8")))
    assert named and sorted(p for p in named if not (TRACKING / p).is_file()) == []
