#!/usr/bin/env bash
# Installs the Versity S3 Gateway (versitygw, Apache-2.0, Go) as build/tools/versitygw: a second
# real S3 server, much faster than moto_server, for the benchmarks (bench/s3_bench.py and
# bench/cold_log_bench.py with --server versitygw) and for tests/s3 with
# OXBOW_S3_SERVER=versitygw. It is built from the Go module proxy with the Go toolchain
# (go >= 1.25, which versitygw's go.mod asks for); docs/storage.md says why CI keeps moto_server.
# Idempotent: nothing is done when the binary of this version is there.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v1.8.0
TOOLS="$PWD/build/tools"
BINARY="$TOOLS/versitygw"
STAMP="$TOOLS/versitygw.version"

if [ -x "$BINARY" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
  echo "install_versitygw: $BINARY ($VERSION) is there"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "install_versitygw: needs the Go toolchain (go >= 1.25) on PATH" >&2
  exit 1
fi
mkdir -p "$TOOLS"
start=$(date +%s)
# No cgo: the POSIX backend needs none, and a static binary starts anywhere.
CGO_ENABLED=0 GOBIN="$TOOLS" nice -n 10 go install -trimpath \
  "github.com/versity/versitygw/cmd/versitygw@$VERSION"
echo "$VERSION" > "$STAMP"
echo "install_versitygw: $BINARY ($VERSION) installed in $(($(date +%s) - start)) s"
