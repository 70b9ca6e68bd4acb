#!/usr/bin/env bash
# Schemathesis, the property-based API fuzzer, for the OpenAPI conformance
# test (docs/test-peers.md): it reads the gateway's own /api/openapi.json and
# sends generated requests, failing on any 5xx or any answer the document does
# not describe. PyPI `schemathesis`, in a cached virtualenv.
# Idempotent: a second run only checks the pinned version. Prints the
# virtualenv's `st` command.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv schemathesis-venv schemathesis==4.32.5)"
echo "$venv/bin/st"
