#!/usr/bin/env bash
# Installs the core's dependency floors — each `name>=version` of setup.cfg's install_requires, as
# `name==version` — with `pip install --no-deps --target .venv/floors`, plus the exact releases those floors pin
# themselves (pydantic's pydantic-core). tests/test_dependency_floors.py puts the folder first on PYTHONPATH and
# runs the core there. Idempotent: the folder is kept while its stamp lists the same floors.
#
#   scripts/setup-dependency-floors.sh          install (instant once built)
#   scripts/setup-dependency-floors.sh --list   print the floors, one `name==version` a line
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$root/.venv/bin/python
folder=$root/.venv/floors

fail() { echo "setup-dependency-floors: $*" >&2; exit 1; }
[ -x "$python" ] || fail ".venv is not built (run make setup)"

floors=$("$python" - "$root/setup.cfg" <<'EOF'
import configparser
import sys

from packaging.requirements import Requirement

config = configparser.ConfigParser()
config.read(sys.argv[1])
for line in filter(None, map(str.strip, config["options"]["install_requires"].splitlines())):
    requirement = Requirement(line)
    lower = [s.version for s in requirement.specifier if s.operator == ">="]
    if len(lower) != 1:
        sys.exit(f"setup.cfg: {line} has no single lower bound (>=) to test")
    print(f"{requirement.name}=={lower[0]}")
EOF
)
if [ "${1:-}" = --list ]; then echo "$floors"; exit 0; fi

[ "$(cat "$folder/.installed" 2>/dev/null)" = "$floors" ] && exit 0
rm -rf "$folder"
install() {
  # wheels only: a floor must install where the lab runs, without a compiler
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary :all: --no-compile \
    --target "$folder" "$@" || fail "could not install $* (is the package index reachable?)"
}
echo "installing the dependency floors into $folder:" $floors
# shellcheck disable=SC2086 # one argument per requirement
install $floors
pinned=$("$python" - "$folder" <<'EOF'
import sys
from importlib.metadata import distributions

from packaging.requirements import Requirement

for dist in distributions(path=[sys.argv[1]]):
    for text in dist.requires or []:
        requirement = Requirement(text)
        exact = [s for s in requirement.specifier if s.operator == "=="]
        if exact and (requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
            print(f"{requirement.name}{requirement.specifier}")
EOF
)
# shellcheck disable=SC2086
[ -z "$pinned" ] || install $pinned
echo "$floors" >"$folder/.installed"
