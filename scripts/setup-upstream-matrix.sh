#!/usr/bin/env bash
# Installs the alternate upstream releases of third_party/upstream-matrix.txt, each with
# `pip install --no-deps --target <venv>/upstreams/<distribution>-<version>`, into the environments that
# `make setup` built. Idempotent: a folder already holding that release is kept as it is.
#
#   scripts/setup-upstream-matrix.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
matrix=$root/third_party/upstream-matrix.txt

fail() { echo "setup-upstream-matrix: $*" >&2; exit 1; }

grep -v '^\s*#' "$matrix" | while read -r venv requirement; do
  [ -n "${venv:-}" ] || continue
  python=$root/$venv/bin/python
  [ -x "$python" ] || fail "$venv is not built (run make setup): needed for $requirement"
  folder=$root/$venv/upstreams/${requirement/==/-}
  [ -f "$folder/.installed" ] && continue
  rm -rf "$folder"
  echo "installing $requirement into $folder"
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile --target "$folder" \
    "$requirement" || fail "could not install $requirement (is the package index reachable?)"
  touch "$folder/.installed"
done
