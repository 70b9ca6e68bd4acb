#!/usr/bin/env bash
# Sourced by the Python test peers' scripts: `pip_venv NAME REQUIREMENT...`
# installs the pinned requirements (`package==version`, extras allowed) from
# PyPI into the virtualenv ~/.cache/meshgate/NAME, once; later calls only
# check the pinned versions. One installer at a time (concurrent test files
# may both ask). Prints the virtualenv's folder.
pip_venv() {
  local name="$1"
  shift
  local venv="${MESHGATE_CACHE:-$HOME/.cache/meshgate}/$name"
  local pins=() requirement
  for requirement in "$@"; do
    # "moto[server]==5.2.5" → ("moto", "5.2.5"), checked with importlib.metadata
    pins+=("$(sed -E 's/\[.*\]//; s/==/ /' <<<"$requirement")")
  done
  local check="import importlib.metadata as m, sys
pins = [line.split() for line in sys.argv[1:]]
sys.exit(any(m.version(name) != version for name, version in pins))"
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if ! "$venv/bin/python" -c "$check" "${pins[@]}" 2>/dev/null; then
    echo "meshgate: installing $* into $venv" >&2
    # A failed install must fail the caller (set -e does not reach into $(...)): check again.
    python3 -m venv "$venv" >&2 && "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2 &&
      "$venv/bin/python" -c "$check" "${pins[@]}" || {
      echo "meshgate: could not install $* into $venv" >&2
      exec 9>&-
      return 1
    }
  fi
  exec 9>&-
  echo "$venv"
}
