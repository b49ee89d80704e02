#!/usr/bin/env bash
# Installs the core's dependency floors — each `name>=version` of setup.cfg's install_requires, as
# `name==version` — with `pip install --no-deps --target .venv/floors`, plus the exact releases those floors pin
# themselves (pydantic's pydantic-core). tests/test_dependency_floors.py puts the folder first on PYTHONPATH and
# runs the core there. Likewise the W&B client's floor (the `wandb` extra's lower bound; Megatron-Bridge pins
# 0.29.0) in .venv/tracker-floors, with, each at its own lower bound, what it requires and .venv does not satisfy
# (wandb 0.29 still requires sentry-sdk, which .venv's newer wandb dropped): the test runs our W&B sink there.
# Idempotent: each folder is kept while its stamp lists the same floors.
#
#   scripts/setup-dependency-floors.sh                  install (instant once built)
#   scripts/setup-dependency-floors.sh --list           print the core's floors, one `name==version` a line
#   scripts/setup-dependency-floors.sh --list-trackers  print the W&B client's floor
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$root/.venv/bin/python

fail() { echo "setup-dependency-floors: $*" >&2; exit 1; }
[ -x "$python" ] || fail ".venv is not built (run make setup)"

# floors SECTION KEY: `name==lower bound` of each requirement setup.cfg lists there
floors() {
  "$python" - "$root/setup.cfg" "$1" "$2" <<'EOF'
import configparser
import sys

from packaging.requirements import Requirement

config = configparser.ConfigParser()
config.read(sys.argv[1])
for line in filter(None, map(str.strip, config[sys.argv[2]][sys.argv[3]].splitlines())):
    requirement = Requirement(line)
    lower = [s.version for s in requirement.specifier if s.operator == ">="]
    if len(lower) != 1:
        sys.exit(f"setup.cfg: {line} has no single lower bound (>=) to test")
    print(f"{requirement.name}=={lower[0]}")
EOF
}
core=$(floors options install_requires)
trackers=$(floors options.extras_require wandb)
if [ "${1:-}" = --list ]; then echo "$core"; exit 0; fi
if [ "${1:-}" = --list-trackers ]; then echo "$trackers"; exit 0; fi

# install FOLDER REQUIREMENT...: wheels only, a floor must install where the lab runs, without a compiler
install() {
  local folder=$1
  shift
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary :all: --no-compile \
    --target "$folder" "$@" || fail "could not install $* (is the package index reachable?)"
}

# also FOLDER MODE: what the distributions in FOLDER require besides themselves. MODE "pinned": the exact
# releases they pin; "unmet": what .venv does not satisfy, each at its lower bound
also() {
  "$python" - "$1" "$2" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, distributions, version

from packaging.requirements import Requirement

for dist in distributions(path=[sys.argv[1]]):
    for text in dist.requires or []:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        if sys.argv[2] == "pinned":
            if any(s.operator == "==" for s in requirement.specifier):
                print(f"{requirement.name}{requirement.specifier}")
            continue
        try:
            if requirement.specifier.contains(version(requirement.name), prereleases=True):
                continue
        except PackageNotFoundError:
            pass
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        print(f"{requirement.name}=={lower[0]}" if lower else str(requirement))
EOF
}

# setup FOLDER FLOORS MODE
setup() {
  local folder=$1 wanted=$2 mode=$3 extra
  [ "$(cat "$folder/.installed" 2>/dev/null)" = "$wanted" ] && return 0
  rm -rf "$folder"
  echo "installing floors into $folder:" $wanted
  # shellcheck disable=SC2086 # one argument per requirement
  install "$folder" $wanted
  extra=$(also "$folder" "$mode")
  # shellcheck disable=SC2086
  [ -z "$extra" ] || install "$folder" $extra
  echo "$wanted" >"$folder/.installed"
}
setup "$root/.venv/floors" "$core" pinned
setup "$root/.venv/tracker-floors" "$trackers" unmet
