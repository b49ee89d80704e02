#!/usr/bin/env bash
# Creates or updates the MaxText environment: upstream MaxText 0.2.5 + JAX (CPU wheels; the same install
# runs on GPU hosts with jax's own CUDA plugin added), the tracker clients and primus (editable), pinned in
# third_party/maxtext-requirements.txt. It is separate from .venv because MaxText's pins (numpy, protobuf,
# transformers...) must not fight torch's; `primus train` runs MaxText experiments with its interpreter.
#
#   scripts/setup-maxtext-venv.sh [VENV]        VENV defaults to .venv-maxtext in the repository root
#
# Idempotent: a stamp in VENV records what was installed; with nothing changed it returns at once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$root/.venv-maxtext}
requirements=$root/third_party/maxtext-requirements.txt
stamp=$venv/.primus-maxtext-installed
pip_install=(-m pip install --quiet --disable-pip-version-check --no-deps)

fail() { echo "setup-maxtext-venv: $*" >&2; exit 1; }

[ -f "$requirements" ] || fail "$requirements is missing"
wanted=$(cat "$requirements" "$root/setup.cfg" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  python=$("$root/scripts/find-python3.12") || fail "no Python 3.12 to create $venv with (see the message above)"
  echo "creating $venv with $python"
  "$python" -m venv "$venv" || fail "could not create the virtual environment $venv"
fi
"$venv/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' \
  || fail "$venv is not a Python 3.12 environment (MaxText 0.2.5 needs 3.12): remove it and run this again"
echo '*' > "$venv/.gitignore"  # keep the environment out of git status

# --no-deps: the file is the complete resolved set; upstream's own extras would pull TPU/CUDA stacks.
"$venv/bin/python" "${pip_install[@]}" -r "$requirements" \
  || fail "installing $requirements failed (is the package index reachable?)"
"$venv/bin/python" "${pip_install[@]}" --no-build-isolation -e "$root" || fail "installing primus into $venv failed"
"$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null \
  || fail "the pinned set is inconsistent: $("$venv/bin/python" -m pip check 2>&1 | head -5)"
smoke=$("$venv/bin/python" -c 'import jax, maxtext.common.metric_logger, primus.backends.maxtext' 2>&1) \
  || fail "MaxText, JAX or primus does not import in $venv: $(echo "$smoke" | tail -5)"
echo "$wanted" > "$stamp"
echo "MaxText environment ready: $venv"
