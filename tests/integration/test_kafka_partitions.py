"""CreatePartitions (docs/kafka.md#createpartitions): a topic's log table gains empty buckets,
its records stay where they are. The shared test also runs against a real Kafka broker."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from oxbowtest.kafka import bootstrap, consume_assigned, new_topic, produce
from oxbowtest.lake import assert_lake_equals_log, wait_lake


def partition_count(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def grow(admin: AdminClient, topic: str, count: int) -> None:
    admin.create_partitions([NewPartitions(topic, count)])[topic].result(timeout=30)
    deadline = time.monotonic() + 30  # Kafka spreads new metadata a moment later
    while partition_count(admin, topic) != count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert partition_count(admin, topic) == count


def read_partition(broker, topic: str, partition: int, count: int) -> list[bytes]:
    """The values of `count` records of the partition from its beginning."""
    got = consume_assigned(broker, topic, [partition], count, start=OFFSET_BEGINNING)
    return [m.value() for m in got]


def test_create_partitions_adds_empty_partitions(oxbow_or_kafka):
    broker = oxbow_or_kafka
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    topic = new_topic()
    admin.create_topics([NewTopic(topic, num_partitions=2,
                                  replication_factor=1)])[topic].result(timeout=30)
    produce(broker, topic, [(p, None, f"old-{p}-{i}".encode(), None)
                            for p in (0, 1) for i in range(5)])
    grow(admin, topic, 5)
    delivered = produce(broker, topic, [(4, None, b"new-4", None), (2, None, b"new-2", None)])
    assert sorted((m.partition(), m.offset()) for m in delivered) == [(2, 0), (4, 0)]
    assert read_partition(broker, topic, 4, 1) == [b"new-4"]
    assert read_partition(broker, topic, 1, 5) == [f"old-1-{i}".encode() for i in range(5)]
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": "w-" + topic})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 3), timeout=10) == (0, 0)
    consumer.close()

    for count in (5, 3):  # not larger: refused
        with pytest.raises(KafkaException) as refused:
            admin.create_partitions([NewPartitions(topic, count)])[topic].result(timeout=30)
        assert refused.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_added_buckets_survive_a_restart_and_reach_the_lake(make_lake_server):
    server = make_lake_server()
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    topic = new_topic()
    admin.create_topics([NewTopic(topic, num_partitions=2,
                                  replication_factor=1)])[topic].result(timeout=30)
    table = "kafka." + topic
    produce(server, topic, [(p, None, b"old", None) for p in (0, 1)])
    wait_lake(server, table)
    grow(admin, topic, 3)
    produce(server, topic, [(2, None, b"new", None)] * 3)
    lake = wait_lake(server, table)
    assert lake["tiered_offsets"] == [1, 1, 3]
    assert_lake_equals_log(server, table, lake["metadata_location"])
    server.restart()
    assert [o["next_offset"] for o in server.describe(table)["bucket_offsets"]] == [1, 1, 3]

    # A compacted topic places records by key: it keeps its partition count.
    compacted = new_topic()
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic(compacted, num_partitions=2, replication_factor=1,
                                  config={"cleanup.policy": "compact"})])[compacted].result(30)
    with pytest.raises(KafkaException) as refused:
        admin.create_partitions([NewPartitions(compacted, 4)])[compacted].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    assert "move its keys" in refused.value.args[0].str()


def test_delete_records_moves_the_log_start(oxbow_or_kafka):
    """DeleteRecords (AdminClient.delete_records, KIP-107): a partition's earliest offset moves
    up, a consumer from the beginning starts there, -1 means the high watermark, and an offset
    past it is OFFSET_OUT_OF_RANGE. The same assertions against a real Kafka 4.4 broker."""
    broker = oxbow_or_kafka
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    topic = new_topic()
    admin.create_topics([NewTopic(topic, num_partitions=2,
                                  replication_factor=1)])[topic].result(timeout=30)
    produce(broker, topic, [(0, None, f"v{i}".encode(), None) for i in range(10)])
    produce(broker, topic, [(1, None, b"other", None)] * 3)

    deleted = admin.delete_records([TopicPartition(topic, 0, 4)])
    assert next(iter(deleted.values())).result(timeout=30).low_watermark == 4
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": "d-" + topic})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (4, 10)
    assert consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (0, 3)
    consumer.close()
    assert read_partition(broker, topic, 0, 6) == [f"v{i}".encode() for i in range(4, 10)]

    with pytest.raises(KafkaException) as refused:
        next(iter(admin.delete_records([TopicPartition(topic, 0, 11)]).values())).result(30)
    assert refused.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    everything = admin.delete_records([TopicPartition(topic, 1, -1)])
    assert next(iter(everything.values())).result(timeout=30).low_watermark == 3


def test_deleted_records_stay_deleted_and_the_lake_keeps_its_copy(make_lake_server):
    """The log start is durable across a restart; rows the lake already holds stay there
    (a Flight read below the start is served from the lake); a compacted topic refuses."""
    server = make_lake_server()
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    topic = new_topic()
    admin.create_topics([NewTopic(topic, num_partitions=1,
                                  replication_factor=1)])[topic].result(timeout=30)
    table = "kafka." + topic
    produce(server, topic, [(0, None, f"v{i}".encode(), None) for i in range(10)])
    wait_lake(server, table)
    deleted = admin.delete_records([TopicPartition(topic, 0, 6)])
    assert next(iter(deleted.values())).result(timeout=30).low_watermark == 6
    server.restart()
    assert server.describe(table)["bucket_offsets"][0]["earliest_offset"] == 6
    assert read_partition(server, topic, 0, 4) == [f"v{i}".encode() for i in range(6, 10)]
    lake_and_log = server.get({"table": table, "from": 0})[0]
    assert lake_and_log.column("value").to_pylist() == [f"v{i}".encode() for i in range(10)]

    compacted = new_topic()
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic(compacted, num_partitions=1, replication_factor=1,
                                  config={"cleanup.policy": "compact"})])[compacted].result(30)
    produce(server, compacted, [(0, b"k", b"v", None)])
    with pytest.raises(KafkaException) as refused:
        next(iter(admin.delete_records([TopicPartition(compacted, 0, 1)]).values())).result(30)
    assert refused.value.args[0].code() == KafkaError.POLICY_VIOLATION
