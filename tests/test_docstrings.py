"""Every module of primus/ says what it is for in at most 15 lines of docstring (an empty ``__init__.py`` needs
none); the longer explanations are in docs/ (docs/tracking-internals.md for the tracking core)."""

import ast
from pathlib import Path

PRIMUS = Path(__file__).resolve().parent.parent / "primus"
MAX_LINES = 15


def test_every_module_has_a_docstring_of_at_most_15_lines():
    lengths = {}
    for path in sorted(PRIMUS.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if source.strip():
            docstring = ast.get_docstring(ast.parse(source), clean=False)
            lengths[str(path.relative_to(PRIMUS))] = len(docstring.splitlines()) if docstring else 0
    assert {module: n for module, n in lengths.items() if not 0 < n <= MAX_LINES} == {}
