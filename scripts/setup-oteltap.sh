#!/usr/bin/env bash
# Installs the pinned OTLP receiver `oteltap` (PyPI) into a git-ignored virtualenv of the project,
# for the export end-to-end tests (tests/otlp_export.rs). Idempotent: does nothing when it is there.
# Prints the path of its CLI. Its Python dependencies are pinned too, so CI runs what we ran.
set -euo pipefail
OTELTAP_VERSION="1.0.0"
OTEL_PROTO_VERSION="1.39.1"
PROTOBUF_VERSION="6.33.2"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/oteltap-$OTELTAP_VERSION"
bin="$prefix/bin/oteltap"
if [ ! -x "$bin" ]; then
  python3 -m venv --help >/dev/null 2>&1 || { echo "setup-oteltap: python3 with venv is required (apt-get install python3-venv)" >&2; exit 1; }
  rm -rf "$prefix"
  python3 -m venv "$prefix"
  "$prefix/bin/python" -m pip install --quiet --disable-pip-version-check \
    "oteltap==$OTELTAP_VERSION" "opentelemetry-proto==$OTEL_PROTO_VERSION" "protobuf==$PROTOBUF_VERSION" >&2
fi
[ -x "$bin" ] || { echo "setup-oteltap: $bin missing after install" >&2; exit 1; }
echo "$bin"
