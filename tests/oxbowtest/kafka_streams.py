"""Kafka Streams 4.4 for tests/integration/test_kafka_streams.py: its jars come from Maven
Central on first use into build/kafka-streams (scripts/setup.sh fetches them)."""

from __future__ import annotations

import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "bench"))
from peers import fetch_classpath  # noqa: E402

STREAMS_VERSION = "4.4.0"
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>oxbow.tests</groupId>
  <artifactId>kafka-streams</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId>
      <version>{STREAMS_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId>
      <version>2.0.17</version></dependency>
  </dependencies>
</project>
"""


def streams_classpath() -> str:
    return fetch_classpath(f"Kafka Streams {STREAMS_VERSION}", POM,
                           REPO_ROOT / "build" / "kafka-streams")
