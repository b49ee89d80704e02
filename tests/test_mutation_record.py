"""tests/MUTATION.md records the mutation score of each core module and why each surviving mutant is
harmless; it is only true of the code it was measured on. Each row names a module and a hash of its code
(scripts/mutation-scores' ``code_hash``: formatting, comments and docstrings do not change it): a module whose
code changed since means the row is stale (rerun `make mutation MUTANTS='<module>*'`, then update the row and its
hash, which scripts/mutation-scores prints)."""

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "MUTATION.md"
ROW = re.compile(r"^\| `(?P<module>primus/[\w/]+\.py)` \| `(?P<hash>[0-9a-f]{16})` \|", re.MULTILINE)
code_hash = runpy.run_path(str(ROOT / "scripts" / "mutation-scores"))["code_hash"]


def test_the_mutation_record_is_of_the_current_code():
    rows = {m["module"]: m["hash"] for m in ROW.finditer(RECORD.read_text())}
    assert rows, f"no module rows in {RECORD}"
    current = {module: code_hash(ROOT / module) for module in rows}
    stale = {module: (recorded, current[module]) for module, recorded in rows.items() if current[module] != recorded}
    assert stale == {}, f"{RECORD.name} is stale for these modules (recorded, now): {stale}"


def test_the_code_hash_ignores_formatting_comments_and_docstrings_but_not_code(tmp_path):
    def hashed(source: str) -> str:
        (tmp_path / "m.py").write_text(source)
        return code_hash(tmp_path / "m.py")

    plain = hashed('def f(a, b):\n    """Add."""\n    return a + b\n')
    assert hashed("def f(a,b):  # adds\n    '''Adds them.'''\n    return (a\n            + b)\n") == plain
    assert hashed("def f(a, b):\n    return a - b\n") != plain
