#!/usr/bin/env bash
# S3-compatible test peer: moto's standalone server from PyPI,
# installed into a cached virtualenv. Idempotent: a second run only checks the
# pinned version and prints the server's path. Prints the moto_server path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv peers-venv "moto[server]==5.2.5")"
echo "$venv/bin/moto_server"
