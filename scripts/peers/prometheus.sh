#!/usr/bin/env bash
# Prometheus's own text-format parser for the metrics tests: the Python
# client library's `prometheus_client.parser` (the reference implementation
# the Prometheus project maintains), in a cached virtualenv. Idempotent: a
# second run only checks the pinned version. Prints the virtualenv's python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv prometheus-venv prometheus_client==0.26.0)"
echo "$venv/bin/python"
