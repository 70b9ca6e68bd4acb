#!/usr/bin/env bash
# The direct readers the retrieval benchmark compares the gateway with
# (bench/README.md, retrieval): Apache Arrow's ADBC PostgreSQL driver (libpq,
# binary COPY into Arrow) and ConnectorX, each reading a table straight into
# a pyarrow Table, from PyPI in a cached virtualenv. Only the benchmark uses
# it. Idempotent: a second run only checks the pinned versions. Prints the
# virtualenv's python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv adbc-venv adbc-driver-postgresql==1.13.0 adbc-driver-manager==1.13.0 pyarrow==26.0.1 connectorx==0.4.6)"
echo "$venv/bin/python"
