#!/usr/bin/env bash
# gRPC's reference client for the interoperability tests and the retrieval
# benchmark (docs/test-peers.md): grpcio (gRPC's C-core) with grpcio-tools and
# protobuf from PyPI, in a cached virtualenv. The platform's public SDK is
# Python, so this is the client a real user's gRPC stream comes from.
# Idempotent: a second run only checks the pinned versions. Prints the
# virtualenv's python.
set -euo pipefail
GRPCIO_VERSION=1.85.1
PROTOBUF_VERSION=7.36.2
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}"
venv="$cache/grpcio-venv"
mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9
check="import importlib.metadata as m, sys; sys.exit(m.version('grpcio') != '$GRPCIO_VERSION' or m.version('grpcio-tools') != '$GRPCIO_VERSION' or m.version('protobuf') != '$PROTOBUF_VERSION')"
if ! "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "meshgate: installing grpcio==$GRPCIO_VERSION, grpcio-tools, protobuf==$PROTOBUF_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "grpcio==$GRPCIO_VERSION" "grpcio-tools==$GRPCIO_VERSION" "protobuf==$PROTOBUF_VERSION" >&2
fi
echo "$venv/bin/python"
