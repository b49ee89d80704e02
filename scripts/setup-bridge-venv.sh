#!/usr/bin/env bash
# Creates or updates the Megatron-Bridge environment: an overlay of .venv (torch, megatron-core, the tracker
# clients and primus come from .venv's site-packages, seen through a .pth line) with megatron-bridge 0.6.2 and
# the packages its training imports, pinned in third_party/bridge-requirements.txt and installed --no-deps.
# .venv itself is never changed, and no second torch is installed. tests/support/bridge_env holds the import
# stand-ins a host without Transformer Engine needs (bridge_stand_ins.py says why); a .pth line installs them.
#
#   scripts/setup-bridge-venv.sh [VENV]        VENV defaults to .venv-bridge in the repository root
#
# Idempotent: a stamp in VENV records what was installed; with nothing changed it returns at once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$root/.venv-bridge}
base=$root/.venv
requirements=$root/third_party/bridge-requirements.txt
stand_ins=$root/tests/support/bridge_env
stamp=$venv/.primus-bridge-installed

fail() { echo "setup-bridge-venv: $*" >&2; exit 1; }

[ -f "$requirements" ] || fail "$requirements is missing"
[ -x "$base/bin/python" ] || fail "$base is missing: build it first (make setup)"
wanted=$(cat "$requirements" "${BASH_SOURCE[0]}" "$stand_ins"/*.py | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "creating $venv (an overlay of $base)"
  "$base/bin/python" -m venv "$venv" || fail "could not create the virtual environment $venv"
fi
echo '*' > "$venv/.gitignore"  # keep the environment out of git status
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
base_site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
# addsitedir (not a bare path line): .venv's own .pth files run too (primus's editable install among them).
# Appended after this environment's site-packages, so Bridge's pins shadow .venv's where they differ.
echo "import site; site.addsitedir('$base_site')" > "$site/zz-primus-base-venv.pth"
printf '%s\nimport bridge_stand_ins; bridge_stand_ins.install()\n' "$stand_ins" > "$site/zz-primus-bridge-stand-ins.pth"

"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$requirements" \
  || fail "installing $requirements failed (is the package index reachable?)"
smoke=$("$venv/bin/python" -c 'import megatron.bridge.training.pretrain, primus.backends.megatron_bridge' 2>&1) \
  || fail "megatron.bridge or primus does not import in $venv: $(echo "$smoke" | tail -5)"
echo "$wanted" > "$stamp"
echo "Megatron-Bridge environment ready: $venv"
