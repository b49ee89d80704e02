"""tests/MUTATION.md records the mutation score of each core module and why each surviving mutant is
harmless; it is only true of the code it was measured on. Each row names a module and a hash of its source:
a module changed since means the row is stale (rerun `make mutation MUTANTS='<module>*'`, then update the row
and its hash, which scripts/mutation-scores prints)."""

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "MUTATION.md"
ROW = re.compile(r"^\| `(?P<module>primus/[\w/]+\.py)` \| `(?P<hash>[0-9a-f]{16})` \|", re.MULTILINE)


def test_the_mutation_record_is_of_the_current_code():
    rows = {m["module"]: m["hash"] for m in ROW.finditer(RECORD.read_text())}
    assert rows, f"no module rows in {RECORD}"
    current = {module: hashlib.sha256((ROOT / module).read_bytes()).hexdigest()[:16] for module in rows}
    stale = {module: (recorded, current[module]) for module, recorded in rows.items() if current[module] != recorded}
    assert stale == {}, f"{RECORD.name} is stale for these modules (recorded, now): {stale}"
