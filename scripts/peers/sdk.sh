#!/usr/bin/env bash
# The platform's public Python SDK for the client-compatibility tests
# (docs/test-peers.md): kamiwaza-sdk from PyPI, with the openai client it
# brings, and pyarrow (its `flight` extra, for Arrow Flight retrieval), in a
# cached virtualenv. meshgate's wire shapes (docs/wire.md) are what this
# client depends on; the tests run it for real.
# Idempotent: a second run only checks the pinned version. Prints the
# virtualenv's python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv sdk-venv "kamiwaza-sdk[flight]==1.3.0" pyarrow==26.0.1)"
echo "$venv/bin/python"
