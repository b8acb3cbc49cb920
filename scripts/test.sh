#!/usr/bin/env bash
# The whole test suite: unit tests (Release and ASan/UBSan), bounded fuzz runs, and the pytest
# integration and conformance suite against the reference implementations.
#   OXBOW_FUZZ_SECONDS  seconds per fuzz target (default 45)
#   OXBOW_SKIP_ASAN=1   skip the sanitizer build, its unit tests and the fuzz runs (local loops)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

# One ZooKeeper for every unit test binary of the run (testing::ZooKeeperServer uses it; pytest
# starts its own once per session).
zk_dir=$(mktemp -d)
zk_port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
scripts/zookeeper.sh start "$zk_port" "$zk_dir"
trap 'scripts/zookeeper.sh stop "$zk_dir"; rm -rf "$zk_dir"' EXIT
export OXBOW_TEST_ZOOKEEPER="127.0.0.1:$zk_port"

scripts/build.sh release
ctest --test-dir build/release --output-on-failure -j2

if [ "${OXBOW_SKIP_ASAN:-0}" != 1 ]; then
  scripts/build.sh asan
  ctest --test-dir build/asan --output-on-failure -j2
  scripts/fuzz.sh "${OXBOW_FUZZ_SECONDS:-45}"
fi

OXBOW_BUILD_DIR="$PWD/build/release" .venv/bin/python -m pytest tests -q
