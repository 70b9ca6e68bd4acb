#!/usr/bin/env bash
# gRPC's reference client for the interoperability tests and the retrieval
# benchmark (docs/test-peers.md): grpcio (gRPC's C-core) with grpcio-tools and
# protobuf from PyPI, in a cached virtualenv. The platform's public SDK is
# Python, so this is the client a real user's gRPC stream comes from.
# Idempotent: a second run only checks the pinned versions. Prints the
# virtualenv's python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv grpcio-venv grpcio==1.85.1 grpcio-tools==1.85.1 protobuf==7.36.2)"
echo "$venv/bin/python"
