#!/usr/bin/env bash
# A real Ray head on loopback for the Ray job runtime's tests (docs/test-peers.md).
#   ray.sh install       pip-installs ray[default] into the cached venv ~/.cache/meshgate/ray-venv (idempotent)
#   ray.sh start DIR     installs if needed, starts a head whose every file lives in DIR; prints the dashboard URL
#   ray.sh stop DIR      stops the head started in DIR (the caller then deletes DIR)
# Each head is private to its DIR, so any number of test runs share a machine: the GCS port is
# Ray's own choice (--port=0), the dashboard, dashboard agent and Ray Client ports are free ports
# picked at start (retried on another set when the head dies), workers bind ports the OS assigns
# (--min/max-worker-port=0), and Ray's temp dir (sessions, logs, sockets, runtime envs) is DIR.
# Keep DIR short: Ray puts Unix sockets at DIR/session_<date>_<pid>/sockets/..., and a socket
# path may not exceed 107 bytes (sun_path in unix(7)).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
RAY_VERSION=2.60.0
START_ATTEMPTS=3

install() { pip_venv ray-venv "ray[default]==$RAY_VERSION"; }

# Free loopback ports from the kernel; Ray binds them seconds later, and a lost race is retried.
free_ports() {
  "$1/bin/python" -c 'import socket
sockets = [socket.socket() for _ in range(3)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))'
}

start() {
  local dir="$1" venv dash_port agent_port client_port url attempt
  venv="$(install)"
  for attempt in $(seq 1 "$START_ATTEMPTS"); do
    read -r dash_port agent_port client_port < <(free_ports "$venv")
    url="http://127.0.0.1:$dash_port"
    # --block keeps the head in the foreground of its own session (setsid), so stop ends exactly
    # the processes this head started, never another run's Ray or a developer's own.
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 is Ray's single-node mode: without it Ray rewrites
    # 127.0.0.1 to the machine's interface address (resolve_ip_for_localhost). TMPDIR keeps the
    # Python temp files of Ray's processes in DIR too.
    TMPDIR="$dir" RAY_TMPDIR="$dir" RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 \
      setsid "$venv/bin/ray" start --head --block --node-ip-address=127.0.0.1 --port=0 \
      --dashboard-host=127.0.0.1 --dashboard-port="$dash_port" --include-dashboard=true \
      --dashboard-agent-listen-port="$agent_port" --ray-client-server-port="$client_port" \
      --min-worker-port=0 --max-worker-port=0 --num-cpus=1 --temp-dir="$dir" --disable-usage-stats \
      >"$dir/head.log" 2>&1 </dev/null &
    echo $! >"$dir/head.pid"
    for _ in $(seq 1 180); do
      if curl -fsS -m 2 "$url/api/version" >/dev/null 2>&1; then
        echo "$url"
        return 0
      fi
      kill -0 "$(cat "$dir/head.pid")" 2>/dev/null || break
      sleep 1
    done
    echo "ray.sh: attempt $attempt: the Ray head did not serve its dashboard at $url; last lines of $dir/head.log:" >&2
    tail -n 20 "$dir/head.log" >&2 || true
    stop "$dir"
  done
  return 1
}

# The head's session (setsid) holds every process it started, including workers
# that moved to process groups of their own; nothing outside it is touched.
session_alive() { ps -eo sid=,stat= | awk -v s="$1" '$1 == s && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }
signal_session() { ps -eo pid=,sid= | awk -v s="$1" '$2 == s { print $1 }' | xargs -r kill "-$2" 2>/dev/null || true; }

stop() {
  local dir="$1" sid
  [ -f "$dir/head.pid" ] || return 0
  sid=$(cat "$dir/head.pid")
  signal_session "$sid" TERM
  # The head and its monitor may hang on SIGTERM; SIGKILL follows after 5 s.
  # Zombies count as gone: where PID 1 does not reap, they linger harmlessly.
  for _ in $(seq 1 50); do
    session_alive "$sid" || break
    sleep 0.1
  done
  signal_session "$sid" KILL
  rm -f "$dir/head.pid"
}

case "${1:-}" in
  install) install >/dev/null ;;
  start | stop)
    [ -d "${2:-}" ] || { echo "usage: $0 $1 DIR (an existing folder private to this head)" >&2; exit 2; }
    "$1" "$(cd "$2" && pwd)"
    ;;
  *) echo "usage: $0 install | start DIR | stop DIR" >&2; exit 2 ;;
esac
