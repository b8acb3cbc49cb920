#!/usr/bin/env bash
# Configures and builds one CMake preset (release, debug or asan; default release).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" "$@"
