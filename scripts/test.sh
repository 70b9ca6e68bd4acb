#!/usr/bin/env bash
# The whole test suite, from a fresh clone: bootstrap Node >= 22 and the npm
# packages, then typecheck, lint, and run every test with node's runner.
# Test peers (PostgreSQL, Kafka, S3, Ray, ...) are started by the tests that
# need them through scripts/peers/*; .ci/run installs their packages.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
. scripts/bootstrap.sh
echo "== gen:check"; npm run --silent gen:check
echo "== typecheck"; npx --no-install tsc --noEmit -p .
echo "== lint"; npx --no-install biome check --diagnostic-level=error . && npx --no-install tsx scripts/check-size.ts
echo "== tests"
pattern=${1:-'test/**/*.test.ts'}
exec node --import tsx --test --test-concurrency=2 --test-timeout=300000 "$pattern"
