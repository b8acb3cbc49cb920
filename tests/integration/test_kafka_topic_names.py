"""Every topic name Kafka accepts works as a topic (docs/kafka.md#topic-names): names that are
also table names map to them, the others to a hash-named table of the `kafka` namespace that
keeps the name in its kafka.topic property. The same test runs against a real Kafka broker."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from oxbowtest.kafka import bootstrap, produce


def names() -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"com.acme.{tag}.orders", f"a.b.c.d.{tag}", f".hidden{tag}", f"trailing{tag}.",
            f"two..dots{tag}", tag + "x" * 241, f"ns{tag}." + "p" * 200, f"plain-name_{tag}"]


def test_every_kafka_topic_name_is_a_topic(oxbow_or_kafka):
    broker = oxbow_or_kafka
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    topics = names()
    for topic, future in admin.create_topics(
            [NewTopic(t, num_partitions=2, replication_factor=1) for t in topics]).items():
        future.result(timeout=30)
    listed = admin.list_topics(timeout=10).topics
    assert all(t in listed and len(listed[t].partitions) == 2 for t in topics)

    produce(broker, topics[0], [(1, b"k", b"first", None)])
    for t in topics:
        produce(broker, t, [(0, t.encode(), ("value of " + t).encode(), None)])
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": "names-" + topics[0],
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(t, 0, 0) for t in topics])
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < len(topics) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got[msg.topic()] = (msg.key(), msg.value())
    consumer.close()
    assert got == {t: (t.encode(), ("value of " + t).encode()) for t in topics}

    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
    for resource, future in admin.describe_configs(resources).items():
        assert future.result(timeout=30)["cleanup.policy"].value == "delete"
    for topic, future in admin.delete_topics(topics).items():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not set(topics) & set(admin.list_topics(timeout=10).topics):
            break
        time.sleep(0.2)
    assert not set(topics) & set(admin.list_topics(timeout=10).topics)

    # What Kafka refuses, both refuse.
    for bad in ["..", "a b", "x" * 250, "é"]:
        with pytest.raises(KafkaException) as refused:
            admin.create_topics([NewTopic(bad, num_partitions=1,
                                          replication_factor=1)])[bad].result(timeout=30)
        assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION, bad


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def test_a_hash_named_table_keeps_its_topic(server):
    """The table behind a name that is no table name: `kafka.<readable start>_<hash>`, with the
    name in kafka.topic; a topic named as that table's own name is not the same topic."""
    topic = f"com.acme.{uuid.uuid4().hex[:8]}.orders"
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    produce(server, topic, [(0, None, b"v", None)])
    tables = [t for t in server.action("list_tables")["tables"]
              if t.get("properties", {}).get("kafka.topic") == topic]
    assert len(tables) == 1, tables
    table = tables[0]["table"]
    assert table.startswith("kafka." + topic.replace(".", "_") + "_")
    assert len(table.rsplit("_", 1)[1]) == 16
    assert server.read_all(table).column("value").to_pylist() == [b"v"]
    # The table's own name as a topic: another topic, which does not exist.
    alias = table.removeprefix("kafka.")
    assert alias not in admin.list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic(alias, num_partitions=1,
                                      replication_factor=1)])[alias].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
