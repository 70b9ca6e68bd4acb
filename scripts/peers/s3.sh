#!/usr/bin/env bash
# S3-compatible test peer (DESIGN.md §7): moto's standalone server from PyPI,
# installed into a cached virtualenv. Idempotent: a second run only checks the
# pinned version and prints the server's path. Prints the moto_server path.
set -euo pipefail
MOTO_VERSION=5.2.5
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}"
venv="$cache/peers-venv"
mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('moto') != '$MOTO_VERSION')" 2>/dev/null; then
  echo "meshgate: installing moto[server]==$MOTO_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
fi
echo "$venv/bin/moto_server"
