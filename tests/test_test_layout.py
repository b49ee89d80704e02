"""pytest imports test modules by basename (prepend import mode, no packages under tests/): two test
files with the same name in different folders make the whole run fail at collection."""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_python_module_basenames_under_tests_are_unique():
    seen = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name != "conftest.py" and "__pycache__" not in path.parts:
            seen[path.name].append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
