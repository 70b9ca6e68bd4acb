#!/usr/bin/env bash
# PostgreSQL test peer (docs/test-peers.md): the Debian server package. Idempotent:
# when no server binaries are found, installs them with the suite's other Debian
# packages (scripts/install-system-deps.sh, which serializes concurrent runs; needs
# root), then prints the newest server bin folder (initdb, postgres, pg_ctl). The
# clusters themselves are throwaway, made per test by test/helpers/peers/postgres.ts.
set -euo pipefail
find_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r d; do [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && echo "$d"; done | tail -1; }
bindir="$(find_bindir)"
if [ -z "$bindir" ]; then
  if [ "$(id -u)" != 0 ]; then echo "meshgate: PostgreSQL server binaries missing; run scripts/install-system-deps.sh as root" >&2; exit 1; fi
  bash "$(dirname "${BASH_SOURCE[0]}")/../install-system-deps.sh"
  bindir="$(find_bindir)"
fi
[ -n "$bindir" ] || { echo "meshgate: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin" >&2; exit 1; }
echo "$bindir"
