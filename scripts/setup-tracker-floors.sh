#!/usr/bin/env bash
# Installs the W&B client's floor — the lower bound of setup.cfg's `wandb` extra, as `wandb==version` — with
# `pip install --no-deps --target .venv/tracker-floors`, plus, each at its own lower bound, what that release
# requires and .venv does not satisfy (wandb 0.29 still requires sentry-sdk, which .venv's newer wandb dropped).
# tests/test_dependency_floors.py puts the folder first on PYTHONPATH and runs our W&B sink offline there.
# Megatron-Bridge pins wandb==0.29.0: the floor must let it in. Idempotent: kept while its stamp is unchanged.
#
#   scripts/setup-tracker-floors.sh          install (instant once built)
#   scripts/setup-tracker-floors.sh --list   print the floor, `wandb==version`
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$root/.venv/bin/python
folder=$root/.venv/tracker-floors

fail() { echo "setup-tracker-floors: $*" >&2; exit 1; }
[ -x "$python" ] || fail ".venv is not built (run make setup)"

floor=$("$python" - "$root/setup.cfg" <<'EOF'
import configparser
import sys

from packaging.requirements import Requirement

config = configparser.ConfigParser()
config.read(sys.argv[1])
[requirement] = [Requirement(line) for line in config["options.extras_require"]["wandb"].split() if line]
lower = [s.version for s in requirement.specifier if s.operator == ">="]
if len(lower) != 1:
    sys.exit(f"setup.cfg: the wandb extra {requirement} has no single lower bound (>=) to test")
print(f"{requirement.name}=={lower[0]}")
EOF
)
if [ "${1:-}" = --list ]; then echo "$floor"; exit 0; fi

[ "$(cat "$folder/.installed" 2>/dev/null)" = "$floor" ] && exit 0
rm -rf "$folder"
install() {
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary :all: --no-compile \
    --target "$folder" "$@" || fail "could not install $* (is the package index reachable?)"
}
echo "installing the W&B client's floor into $folder: $floor"
install "$floor"
# what the floor requires that .venv lacks, or holds in a release the floor refuses: each at its lower bound
unmet=$("$python" - "$folder" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, distributions, version

from packaging.requirements import Requirement

for dist in distributions(path=[sys.argv[1]]):
    for text in dist.requires or []:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            if requirement.specifier.contains(version(requirement.name), prereleases=True):
                continue
        except PackageNotFoundError:
            pass
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        print(f"{requirement.name}=={lower[0]}" if lower else str(requirement))
EOF
)
# shellcheck disable=SC2086 # one argument per requirement
[ -z "$unmet" ] || install $unmet
echo "$floor" > "$folder/.installed"
