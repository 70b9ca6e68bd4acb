#!/usr/bin/env bash
# Debian packages the test suite and its peers need (binutils' strip for scripts/build.sh's executable, dpkg-dev's
# dpkg-shlibdeps for its Debian package; lintian, and systemd's systemd-analyze, check that package;
# nginx for the forward-auth test and the proxy benchmark; haproxy balances the cluster test's nodes;
# bubblewrap and util-linux's prlimit/setpriv/setsid
# make the local job sandbox; chromium runs the console's browser tests). Idempotent: installs only what is missing, so a developer machine pays
# nothing the second time.
set -euo pipefail
# One apt at a time across concurrent runs (apt-get fails at once on a held dpkg lock);
# what is missing is decided under the lock, after any other run's install.
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}"
mkdir -p "$cache"
exec 9>"$cache/apt.lock"
flock 9
packages=(curl ca-certificates binutils dpkg-dev lintian systemd bubblewrap util-linux nginx haproxy postgresql openjdk-17-jre-headless maven python3 python3-venv python3-pip chromium)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
