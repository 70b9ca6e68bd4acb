#!/usr/bin/env bash
# Builds meshgate when its outputs are older than their inputs (scripts/build.ts does the building):
#   scripts/build.sh            dist/meshgate, the single executable (and the bundle inside it), and the Debian
#                               package of it, dist/meshgate_<version>_<architecture>.deb (scripts/package-deb.ts)
#   scripts/build.sh --bundle   dist/meshgate.mjs (and its chunks) only, the bundle bin/meshgate runs
# The inputs: the sources, the migrations, the generated protobuf code, the npm packages (package-lock.json and the
# install stamp), this script, build.ts and sqlite-addon.ts, and HEAD's commit (stamped for `meshgate --version`);
# the package's, the executable, packaging/ and package-deb.ts. When current, this costs a `find` and a
# `git rev-parse`, not a Node.js start. Concurrent runs build once: the second waits on the lock,
# then finds the outputs current.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bundle=dist/meshgate.mjs
executable=dist/meshgate

head_commit() { git rev-parse HEAD 2>/dev/null || echo unknown; }

bundle_current() {
  [ -f "$bundle" ] && [ "$(cat dist/meshgate.commit 2>/dev/null)" = "$(head_commit)" ] || return 1
  local inputs=(app domains gateway proto/gen data/migrations
    package.json package-lock.json scripts/build.sh scripts/build.ts scripts/sqlite-addon.ts)
  [ -f node_modules/.meshgate-lockfile ] && inputs+=(node_modules/.meshgate-lockfile)
  [ -z "$(find "${inputs[@]}" -newer "$bundle" -print -quit)" ]
}

# The executable also depends on the Node.js binary it is made of.
executable_current() {
  bundle_current && [ -f "$executable" ] &&
    [ -z "$(find "$bundle" "$(command -v node)" -newer "$executable" -print -quit)" ]
}

# One package in dist/ (package-deb.ts removes the others), newer than what it is made of.
package_current() {
  local packages=(dist/meshgate_*.deb)
  executable_current && [ "${#packages[@]}" = 1 ] && [ -f "${packages[0]}" ] &&
    [ -z "$(find "$executable" packaging scripts/package-deb.ts -newer "${packages[0]}" -print -quit)" ]
}

target=sea
current=package_current
if [ "${1:-}" = --bundle ]; then
  target=bundle
  current=bundle_current
fi
"$current" && exit 0

. scripts/bootstrap.sh
mkdir -p dist
exec 9>dist/.build.lock
flock 9
"$current" && exit 0
# Type stripping is on by default from Node 23.6 and 22.18; the flag turns it on for the Node 22 releases before.
if [ $target = bundle ] || ! executable_current; then
  echo "meshgate: building $([ $target = bundle ] && echo "$bundle" || echo "$executable") (scripts/build.sh)" >&2
  node --experimental-strip-types scripts/build.ts "$target"
fi
if [ $target = sea ]; then
  echo "meshgate: packaging dist/meshgate_*.deb (scripts/package-deb.ts)" >&2
  node --experimental-strip-types scripts/package-deb.ts
fi
