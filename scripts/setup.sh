#!/usr/bin/env bash
# Installs everything Oxbow needs on a fresh Debian machine: C++ libraries via apt, a project
# venv (.venv) with the Python reference implementations (pyspark, DuckDB with its iceberg, avro
# and httpfs extension wheels among them), and the jars of the Java peers from Maven: the Iceberg
# Spark runtime and AWS bundle (build/spark), Kafka 4.4 (build/kafka), Kafka Streams 4.4
# (build/kafka-streams) and Flink 2.2 with its Kafka connector (build/flink), so the test suite
# needs no network.
# Idempotent: only what is missing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang clang-format libclang-rt-14-dev
  librocksdb-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  zlib1g-dev
  libzstd-dev liblz4-dev libsnappy-dev libxxhash-dev libdeflate-dev  # libdeflate: Parquet page CRC-32
  libssl-dev libcurl4-openssl-dev openssl  # openssl: the TLS tests make their certificates
  nlohmann-json3-dev
  prometheus-cpp-dev libcpp-httplib-dev  # the metrics listener, the Iceberg REST catalog
  libzookeeper-mt-dev  # cluster mode's coordination (docs/cluster.md)
  zookeeper  # ZooKeeper 3.8's server jars, for the tests and scripts/cluster.sh (no service)
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev libspdlog-dev  # fmt: spdlog's formatter (spdlog::spdlog links fmt::fmt)
  python3-venv
  maven openjdk-17-jdk-headless  # the build (the kafka-clients jar the Kafka codec is generated
                                 # from), bench/vs_kafka (Kafka), tests/rest (Spark, its Iceberg jar)
  chromium chromium-driver  # the console's browser tests (Selenium drives the system's Chromium)
  prometheus  # promtool and a Prometheus of its own for the Grafana dashboard's test (no service)
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # Debian's prometheus package enables (and, where services may start, starts) a server on
  # :9090 scraping itself; the tests start their own on a free port, so it is stopped and
  # disabled right after its install.
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    if [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    else
      $SUDO systemctl disable prometheus.service >/dev/null 2>&1 || true  # only the symlink
      $SUDO /etc/init.d/prometheus stop >/dev/null 2>&1 || true
      $SUDO update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Reinstalled whenever tests/requirements.txt changes (its hash is kept in the venv).
stamp=.venv/.requirements.sha256
if ! sha256sum --status -c "$stamp" 2>/dev/null; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r tests/requirements.txt
  sha256sum tests/requirements.txt > "$stamp"
fi
.venv/bin/python tests/spark_session.py >/dev/null  # fetches the jars once; then a no-op
.venv/bin/python -c 'import sys; sys.path[:0] = ["tests", "bench"]
from vs_kafka import fetch_kafka; from oxbowtest.flink import flink_classpath
from oxbowtest.kafka_streams import streams_classpath
fetch_kafka(); flink_classpath(); streams_classpath()' >/dev/null
echo "setup: ok"
