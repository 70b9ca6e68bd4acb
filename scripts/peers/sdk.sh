#!/usr/bin/env bash
# The platform's public Python SDK for the client-compatibility tests
# (docs/test-peers.md): kamiwaza-sdk from PyPI, with the openai client it
# brings, in a cached virtualenv. The contract (spec/contract.md) is written
# so that this client works against meshgate; the tests run it for real.
# Idempotent: a second run only checks the pinned version. Prints the
# virtualenv's python.
set -euo pipefail
SDK_VERSION=1.3.0
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}"
venv="$cache/sdk-venv"
mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('kamiwaza-sdk') != '$SDK_VERSION')" 2>/dev/null; then
  echo "meshgate: installing kamiwaza-sdk==$SDK_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kamiwaza-sdk==$SDK_VERSION" >&2
fi
echo "$venv/bin/python"
