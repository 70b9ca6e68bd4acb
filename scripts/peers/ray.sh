#!/usr/bin/env bash
# A real Ray head on loopback for the Ray job runtime's tests (DESIGN.md §7).
#   ray.sh install   pip-installs ray[default] into a cached venv (idempotent)
#   ray.sh start     installs if needed, starts a head with its dashboard (Jobs API) on loopback
#   ray.sh stop      stops that head
#   ray.sh url       prints the dashboard URL
# Settings: MESHGATE_RAY_VENV (default ~/.cache/meshgate/ray-venv), MESHGATE_RAY_DASHBOARD_PORT
# (28265), MESHGATE_RAY_GCS_PORT (26379), MESHGATE_RAY_TEMP_DIR (/tmp/meshgate-ray).
# Ports are fixed (Ray needs them up front) and away from Ray's defaults so a
# developer's own Ray is not disturbed.
set -euo pipefail
RAY_VERSION=2.60.0
venv="${MESHGATE_RAY_VENV:-$HOME/.cache/meshgate/ray-venv}"
dash_port="${MESHGATE_RAY_DASHBOARD_PORT:-28265}"
gcs_port="${MESHGATE_RAY_GCS_PORT:-26379}"
temp_dir="${MESHGATE_RAY_TEMP_DIR:-/tmp/meshgate-ray}"
url="http://127.0.0.1:${dash_port}"

install() {
  if [ -x "$venv/bin/ray" ] && "$venv/bin/python" -c "import ray, sys; sys.exit(ray.__version__ != '$RAY_VERSION')" 2>/dev/null; then
    return 0
  fi
  mkdir -p "$(dirname "$venv")"
  # One installer at a time: concurrent test files may both ask.
  exec 9>"$venv.lock"
  flock 9
  if [ ! -x "$venv/bin/ray" ]; then
    echo "ray.sh: installing ray[default]==$RAY_VERSION into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "ray[default]==$RAY_VERSION" >&2
  fi
  exec 9>&-
}

up() { curl -fsS -m 2 "$url/api/version" >/dev/null 2>&1; }

start() {
  install
  if up; then echo "$url"; return 0; fi
  mkdir -p "$temp_dir"
  # --block keeps the head in the foreground of its own process group (setsid), so
  # stop can end exactly the processes this script started, never anyone else's Ray.
  # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 is Ray's single-node mode: without it Ray rewrites
  # 127.0.0.1 to the machine's interface address (resolve_ip_for_localhost) and its GCS,
  # raylet and dashboard talk over that address. Tests talk to loopback only.
  RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 setsid "$venv/bin/ray" start --head --block --node-ip-address=127.0.0.1 --port="$gcs_port" \
    --dashboard-host=127.0.0.1 --dashboard-port="$dash_port" --include-dashboard=true --num-cpus=1 \
    --temp-dir="$temp_dir" --disable-usage-stats >"$temp_dir/head.log" 2>&1 </dev/null &
  echo $! >"$temp_dir/head.pid"
  for _ in $(seq 1 180); do
    if up; then echo "$url"; return 0; fi
    if ! kill -0 "$(cat "$temp_dir/head.pid")" 2>/dev/null; then break; fi
    sleep 1
  done
  echo "ray.sh: the Ray head did not serve its dashboard at $url; last lines of $temp_dir/head.log:" >&2
  tail -n 20 "$temp_dir/head.log" >&2 || true
  stop
  return 1
}

# The head's session (setsid) holds every process it started, including workers
# that moved to process groups of their own; nothing outside it is touched.
session_alive() { ps -eo sid=,stat= | awk -v s="$1" '$1 == s && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }
signal_session() { ps -eo pid=,sid= | awk -v s="$1" '$2 == s { print $1 }' | xargs -r kill "-$2" 2>/dev/null || true; }

stop() {
  [ -f "$temp_dir/head.pid" ] || return 0
  sid=$(cat "$temp_dir/head.pid")
  signal_session "$sid" TERM
  # The head and its monitor may hang on SIGTERM; SIGKILL follows after 5 s.
  # Zombies count as gone: where PID 1 does not reap, they linger harmlessly.
  for _ in $(seq 1 5); do
    session_alive "$sid" || break
    sleep 1
  done
  signal_session "$sid" KILL
  rm -f "$temp_dir/head.pid"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  *) echo "usage: $0 install|start|stop|url" >&2; exit 2 ;;
esac
