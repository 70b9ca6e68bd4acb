#!/usr/bin/env bash
# The ACME test peer: Pebble, the small ACME (RFC 8555) server Let's Encrypt
# publishes for testing clients, and pebble-challtestsrv, its companion that
# answers the DNS queries Pebble's validation makes (so the test names resolve
# to 127.0.0.1). Built from the pinned Go module into
# ~/.cache/meshgate/pebble-$PEBBLE_VERSION/bin, with the module's test/certs
# beside them (certs/localhost: the ACME directory's own HTTPS certificate and
# key; certs/pebble.minica.pem: the root it chains to, which clients trust).
# Idempotent; one installer at a time. Prints the folder holding pebble,
# pebble-challtestsrv and certs/.
set -euo pipefail
PEBBLE_VERSION=v2.10.3
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}/pebble-$PEBBLE_VERSION"
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [ ! -f "$cache/bin/.complete" ]; then
  command -v go >/dev/null || { echo "meshgate: go is required to build the pebble test peer" >&2; exit 1; }
  echo "meshgate: building pebble $PEBBLE_VERSION into $cache/bin" >&2
  rm -rf "$cache/bin"
  mkdir -p "$cache/bin"
  # A private module and build cache: nothing of the user's own Go setup is read or changed.
  export GOPATH="$cache/gopath" GOCACHE="$cache/gocache" GOFLAGS=-modcacherw GOTOOLCHAIN=local
  GOBIN="$cache/bin" go install \
    "github.com/letsencrypt/pebble/v2/cmd/pebble@$PEBBLE_VERSION" \
    "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@$PEBBLE_VERSION" >&2
  module="$(go env GOMODCACHE)/github.com/letsencrypt/pebble/v2@$PEBBLE_VERSION"
  cp -r "$module/test/certs" "$cache/bin/certs"
  rm -rf "$cache/gocache"
  touch "$cache/bin/.complete"
fi
exec 9>&-
echo "$cache/bin"
