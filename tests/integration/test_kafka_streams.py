"""Kafka Streams 4.4 on Oxbow: the word count of Kafka's own quickstart, whose KTable needs the
topics Streams creates itself (a repartition topic with segment.bytes and
message.timestamp.type, a compacted changelog topic: docs/kafka.md#topic-configs), consumer
groups with Streams' own assignor, and keyed records both ways, at least once and exactly once
(exactly_once_v2: transactions that commit the input offsets with the output and the state
store's changelog). The same test runs against a real Kafka 4.4 broker."""

from __future__ import annotations

import collections
import pathlib
import subprocess
import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from oxbowtest.kafka import bootstrap, produce
from oxbowtest.kafka_streams import streams_classpath


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_word_count(oxbow_or_kafka, guarantee, tmp_path):
    broker = oxbow_or_kafka
    tag = uuid.uuid4().hex[:8]
    lines, counts, app = f"lines-{tag}", f"counts-{tag}", f"wordcount-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    for topic in (lines, counts):
        admin.create_topics([NewTopic(topic, num_partitions=2,
                                      replication_factor=1)])[topic].result(timeout=30)
    text = ["all streams lead to kafka", "hello kafka streams", "join kafka summit",
            "oxbow streams kafka records"] * 5
    produce(broker, lines, [(i % 2, None, line.encode(), None) for i, line in enumerate(text)])
    expected = collections.Counter(word for line in text for word in line.split())
    run = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", streams_classpath(),
         str(pathlib.Path(__file__).with_name("WordCount.java")), bootstrap(broker), lines,
         counts, app, str(tmp_path / "state"),
         ",".join(f"{word}={n}" for word, n in expected.items()), guarantee],
        capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    # The topics Streams made for itself, with the configs it asked for.
    internal = [t for t in admin.list_topics(timeout=10).topics if t.startswith(app + "-")]
    policies = {t: configs["cleanup.policy"].value for t, configs in (
        (resource.name, future.result(timeout=30)) for resource, future in admin.describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, t) for t in internal]).items())}
    assert sorted(policies.values()) == ["compact", "delete"], policies
    assert all(p == ("compact" if t.endswith("-changelog") else "delete")
               for t, p in policies.items())
