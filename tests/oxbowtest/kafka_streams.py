"""Kafka Streams 4.4 for tests/integration/test_kafka_streams.py: its jars come from Maven
Central on first use into build/kafka-streams (scripts/setup.sh fetches them)."""

from __future__ import annotations

import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "bench"))
from peers import fetch_classpath, maven_pom  # noqa: E402

STREAMS_VERSION = "4.4.0"
POM = maven_pom("kafka-streams", [("org.apache.kafka", "kafka-streams", STREAMS_VERSION),
                                   ("org.slf4j", "slf4j-nop", "2.0.17")])


def streams_classpath() -> str:
    return fetch_classpath(f"Kafka Streams {STREAMS_VERSION}", POM,
                           REPO_ROOT / "build" / "kafka-streams")
