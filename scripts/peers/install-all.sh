#!/usr/bin/env bash
# Installs everything the real test peers need (docs/test-peers.md):
# the PostgreSQL server (Debian), moto in a cached virtualenv (PyPI), and the
# Kafka and HiveServer2 jars (Maven Central), grpcio (PyPI) for the gRPC
# interoperability tests, the public Python SDK (PyPI) for the client-
# compatibility tests, prometheus_client and opentelemetry-proto (PyPI) for the
# metrics and tracing tests, Schemathesis (PyPI) for the API fuzzing test and
# openapi-spec-validator (PyPI) for the API document test, and Pebble (a Go module) for the ACME
# tests, all cached under ~/.cache/meshgate.
# Idempotent: a second run costs well under a second. The tests start the
# peers themselves through test/helpers/peers/*.ts.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for peer in postgres s3 kafka hive grpcio sdk prometheus otlp schemathesis openapi-validator pebble; do
  start=$SECONDS
  path="$(bash "$here/$peer.sh")"
  echo "test peer $peer: $path ($((SECONDS - start)) s)"
done
