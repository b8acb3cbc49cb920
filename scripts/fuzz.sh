#!/usr/bin/env bash
# Runs every libFuzzer target of the asan build for a bounded time each, from its seed corpus,
# one target per core at a time.
# Usage: scripts/fuzz.sh [seconds-per-target]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shopt -s nullglob
targets=(build/asan/fuzz/*_fuzzer)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets built (run scripts/build.sh asan)" >&2
  exit 1
fi

run_target() {
  local target=$1 seconds=$2 name corpus seeds
  name=$(basename "$target")
  corpus="build/asan/fuzz-corpus/$name"
  mkdir -p "$corpus"
  seeds="fuzz/seeds/$name"
  [ -d "$seeds" ] && cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
  if ! "$target" -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 "$corpus" \
      > "build/asan/$name.log" 2>&1; then
    echo "fuzz: $name FAILED"
    tail -50 "build/asan/$name.log"
    return 1
  fi
  echo "fuzz: $name ran ${seconds}s, $(grep -E '^stat::number_of_executed_units' \
      "build/asan/$name.log" | awk '{print $2}') inputs"
}
export -f run_target

printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_target "$@"' _ {} "$seconds"
