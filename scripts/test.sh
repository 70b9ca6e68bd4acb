#!/usr/bin/env bash
# The whole test suite, from a fresh clone: bootstrap Node >= 22 and the npm
# packages, install what the real test peers need (Debian packages, then
# PostgreSQL, moto, Kafka and HiveServer2 jars, Ray — all idempotent and cached
# under ~/.cache/meshgate, so a second run costs seconds), then check the
# generated code, typecheck, lint, build the executable (scripts/build.sh), and run every test with node's runner.
# The tests start and stop the peers themselves (test/helpers/peers/*).
#
# Runs share a machine (docs/test-peers.md): every peer picks free ports, and
# everything the run writes to the temp dir (peers' data, Ray's sessions,
# Python's and Node's temp files) goes under one folder of its own, TMPDIR for
# every process it starts, deleted at exit whatever the outcome.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
run_dir="$(mktemp -d "${TMPDIR:-/tmp}/meshgate-XXXXXX")"
# Traversable by others, not listable: under root, PostgreSQL runs as the `postgres` user
# and must reach its cluster folder inside.
chmod 711 "$run_dir"
cleanup() {
  # Normally the tests have stopped their peers already; this covers an interrupted run.
  # Ray heads run in sessions of their own, so only ray.sh can stop one.
  local pid_file
  for pid_file in "$run_dir"/ray-*/head.pid; do
    [ -f "$pid_file" ] && bash scripts/peers/ray.sh stop "$(dirname "$pid_file")"
  done
  # Any other process still carrying this run's TMPDIR is a peer a killed test process left behind.
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid="${environ#/proc/}"
    pid="${pid%/environ}"
    [ "$pid" != $$ ] && grep -qsxzF "TMPDIR=$run_dir" "$environ" && kill -KILL "$pid" 2>/dev/null
  done
  rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export TMPDIR="$run_dir"

bash scripts/bootstrap.sh
. scripts/bootstrap.sh
bash scripts/install-system-deps.sh
bash scripts/peers/install-all.sh
bash scripts/peers/ray.sh install
echo "== gen:check"; npm run --silent gen:check
echo "== typecheck"; npx --no-install tsc --noEmit -p .
# One command per line: under `set -e` a failure inside an `a && b` list does not stop the script.
echo "== lint"
npx --no-install biome check --diagnostic-level=error .
npx --no-install tsx scripts/check-size.ts
npx --no-install tsx scripts/check-imports.ts
npx --no-install tsx scripts/check-citations.ts
# The single executable, which test/integration/scripts/sea.test.ts runs outside the checkout
# (and the bundle bin/meshgate runs).
echo "== build"; bash scripts/build.sh
echo "== tests (temp dir $run_dir, deleted at exit)"
# node's runner, with the watchdog that fails a test file whose process outlives its tests (a child or socket a failed
# cleanup left open), and `timeout` as the last bound on each phase, well inside CI's.
tests=(node --import tsx --import ./test/helpers/file-watchdog.ts --test --test-concurrency=2 --test-timeout=300000)
# Every test, in test/{unit,integration}/<layer>/<area>/ beside the harness's own (docs/test-peers.md), or only the
# globs given.
if [ $# -gt 0 ]; then
  timeout --kill-after=30 45m "${tests[@]}" "$@"
  exit
fi
timeout --kill-after=30 45m "${tests[@]}" 'test/**/*.test.ts'
# The domain suites again with every test gateway (and the CLI beside it) on PostgreSQL, one fresh database each
# (test/helpers/engine.ts): the contract every store keeps on both engines.
echo "== tests on PostgreSQL"
MESHGATE_TEST_DATABASE=postgres timeout --kill-after=30 25m "${tests[@]}" \
  'test/integration/domains/{auth,authz,catalog,federation,gates,mesh,routing,serving}/*.test.ts' \
  'test/integration/domains/jobs/{api,gate}.test.ts' 'test/integration/domains/retrieval/{fs,gates}.test.ts' \
  'test/integration/gateway/db/change-feed.test.ts' 'test/unit/domains/**/*.test.ts'
