#!/usr/bin/env bash
# The whole test suite, from a fresh clone: bootstrap Node >= 22 and the npm
# packages, install what the real test peers need (Debian packages, then
# PostgreSQL, moto, Kafka and HiveServer2 jars, Ray — all idempotent and cached
# under ~/.cache/meshgate, so a second run costs seconds), then check the
# generated code, typecheck, lint, and run every test with node's runner.
# The tests start and stop the peers themselves (test/helpers/peers/*).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
. scripts/bootstrap.sh
bash scripts/install-system-deps.sh
bash scripts/peers/install-all.sh
bash scripts/peers/ray.sh install >/dev/null
echo "== gen:check"; npm run --silent gen:check
echo "== typecheck"; npx --no-install tsc --noEmit -p .
echo "== lint"; npx --no-install biome check --diagnostic-level=error . && npx --no-install tsx scripts/check-size.ts
echo "== tests"
pattern=${1:-'test/**/*.test.ts'}
exec node --import tsx --test --test-concurrency=2 --test-timeout=300000 "$pattern"
