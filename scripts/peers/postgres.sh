#!/usr/bin/env bash
# PostgreSQL test peer (DESIGN.md §7): the Debian server package. Idempotent:
# installs `postgresql` only when no server binaries are found (needs root),
# then prints the newest server bin folder (initdb, postgres, pg_ctl). The
# clusters themselves are throwaway, made per test by test/helpers/peers/postgres.ts.
set -euo pipefail
find_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r d; do [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && echo "$d"; done | tail -1; }
bindir="$(find_bindir)"
if [ -z "$bindir" ]; then
  if [ "$(id -u)" != 0 ]; then echo "meshgate: PostgreSQL server binaries missing; run scripts/install-system-deps.sh as root" >&2; exit 1; fi
  echo "meshgate: installing Debian package postgresql" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  bindir="$(find_bindir)"
fi
[ -n "$bindir" ] || { echo "meshgate: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin" >&2; exit 1; }
echo "$bindir"
