#!/usr/bin/env bash
# The OpenTelemetry protocol's own message definitions for the tracing tests:
# PyPI `opentelemetry-proto` (the classes protoc generates from the
# opentelemetry-proto repository's .proto files, published by the
# OpenTelemetry project) with protobuf's runtime, in a cached virtualenv. The
# test receiver (test/helpers/peers/otlp_receiver.py) decodes every export
# request with them; Werkzeug serves it (an exporter may send its body
# chunked, which the standard library's http.server does not decode).
# Idempotent: a second run only checks the pinned versions. Prints the
# virtualenv's python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pip-venv.sh"
venv="$(pip_venv otlp-venv opentelemetry-proto==1.45.2 protobuf==7.36.2 werkzeug==3.1.9)"
echo "$venv/bin/python"
