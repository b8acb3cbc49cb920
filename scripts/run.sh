#!/usr/bin/env bash
# Builds Oxbow, checks the build with `oxbow selfcheck`, and runs oxbowd on its embedded
# defaults: data in ./data, Arrow Flight on 127.0.0.1:8815, Kafka on 127.0.0.1:9092. Extra
# arguments go to oxbowd.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
build/release/tools/oxbow selfcheck
exec build/release/tools/oxbowd "$@"
