#!/usr/bin/env bash
# openapi-spec-validator, an independent validator of OpenAPI documents, for
# the API document test (docs/test-peers.md): it checks the gateway's served
# /api/openapi.json against the OpenAPI 3.1 specification's own schema and
# rules (unique operationIds, resolvable $refs, path parameters declared).
# PyPI `openapi-spec-validator`, in a cached virtualenv.
# Idempotent: a second run only checks the pinned version. Prints the
# virtualenv's `openapi-spec-validator` command.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv openapi-validator-venv openapi-spec-validator==0.9.0)"
echo "$venv/bin/openapi-spec-validator"
