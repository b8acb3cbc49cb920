#!/usr/bin/env bash
# Builds Oxbow and runs it on its embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
exec build/release/tools/oxbow selfcheck "$@"
