"""Primary-key tables over Kafka (docs/kafka.md#primary-key-tables): a compacted topic
(cleanup.policy=compact) is a primary-key table keyed by the record key, records upsert their key
and tombstones delete it, and a consumer replays the changelog to the table's rows. The
compacted-topic test runs the same code against a real Kafka 4.4 broker."""

from __future__ import annotations

import base64
import io
import json
import uuid

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

from oxbowtest.kafka import bootstrap, consume_assigned, deliver
from oxbowtest.primary_keys import changelog, do_get, snapshot


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def consume_all(broker, topic: str, partitions: int, count: int) -> list:
    """Every record of every partition from the earliest offset: exactly `count` of them."""
    return consume_assigned(broker, topic, partitions, count, exactly=True)


def replay(messages, key=lambda m: m.key(), value=lambda m: m.value()) -> dict:
    """What a KTable makes of records: the last value per key, a tombstone removing the key."""
    state = {}
    for m in messages:
        if m.value() is None:
            state.pop(key(m), None)
        else:
            state[key(m)] = value(m)
    return state


def test_compacted_topic_replays_to_the_latest_value_per_key(oxbow_or_kafka):
    broker = oxbow_or_kafka
    topic = "compact_" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                  config={"cleanup.policy": "compact"})])[topic].result(timeout=30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"

    # Three rounds of values for 30 keys, then tombstones for a third of them; no partition is
    # named: the client's partitioner (librdkafka's crc32 of the key) picks it.
    messages = []
    for round_ in range(3):
        for k in range(30):
            messages.append((-1, f"key-{k}".encode(), f"v{round_}-{k}".encode(),
                             [("round", str(round_).encode())], 1_700_000_000_000 + round_))
    messages += [(-1, f"key-{k}".encode(), None, None, 1_700_000_000_100) for k in range(0, 30, 3)]
    reports, queued = deliver({"bootstrap.servers": bootstrap(broker), "linger.ms": 5},
                              topic, messages)
    assert queued == 0 and all(err is None for err, _ in reports), reports[:3]
    expected = {f"key-{k}".encode(): f"v2-{k}".encode() for k in range(30) if k % 3}

    got = consume_all(broker, topic, 3, len(messages))
    assert replay(got) == expected
    # Each key's records are in one partition, in the order produced.
    partitions = {}
    for m in got:
        partitions.setdefault(m.key(), set()).add(m.partition())
    assert all(len(p) == 1 for p in partitions.values())
    by_key = {}
    for m in got:
        by_key.setdefault(m.key(), []).append(m)
    assert [m.value() for m in by_key[b"key-1"]] == [b"v0-1", b"v1-1", b"v2-1"]
    last = by_key[b"key-1"][-1]
    assert last.timestamp() == (1, 1_700_000_000_002)  # CreateTime, as produced
    assert last.headers() == [("round", b"2")]
    assert [m.value() for m in by_key[b"key-3"]] == [b"v0-3", b"v1-3", b"v2-3", None]

    # A record without a key has no place in a compacted topic.
    reports, queued = deliver({"bootstrap.servers": bootstrap(broker), "retries": 0},
                              topic, [(0, None, b"keyless", None)])
    assert queued == 0 and len(reports) == 1
    assert reports[0][0] is not None and reports[0][0].code() == KafkaError.INVALID_RECORD


def test_a_compacted_topic_is_a_primary_key_table(server):
    """The rows behind a compacted topic: a snapshot and lookups over Flight equal what a
    consumer replays, and cleanup.policy cannot change (Kafka lets it; docs/kafka.md says why)."""
    topic = "compact_" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                                  config={"cleanup.policy": "compact"})])[topic].result(timeout=30)
    table = "kafka." + topic
    assert server.describe(table)["primary_key"] == ["key"]
    messages = [(-1, f"k{k % 7}".encode(), f"value-{k}".encode(), None) for k in range(40)]
    messages += [(-1, b"k3", None, None), (-1, b"k-never-written", None, None)]
    reports, queued = deliver({"bootstrap.servers": bootstrap(server), "linger.ms": 5},
                              topic, messages)
    assert queued == 0 and all(err is None for err, _ in reports)
    expected = {f"k{k % 7}".encode(): f"value-{k}".encode() for k in range(40)}
    del expected[b"k3"]

    rows, _ = snapshot(server, table)
    assert {r["key"]: r["value"] for r in rows.to_pylist()} == expected
    # Ticket values are JSON as in the text formats: binary as base64.
    lookup = {"key": [base64.b64encode(k).decode() for k in (b"k1", b"k3")]}
    found, _ = do_get(server, {"table": table, "lookup": lookup})
    assert found.column("value").to_pylist() == [expected[b"k1"]]
    # changelog.image=none: one record per change; the delete of a key never written is none.
    assert len(changelog(server, table, 2)) == 41
    assert replay(consume_all(server, topic, 2, 41)) == expected

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic,
                              incremental_configs=[ConfigEntry(
                                  "cleanup.policy", "delete",
                                  incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as refused:
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert "cleanup.policy is fixed" in str(refused.value)


ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("item", pa.string()),
                    ("amount", pa.float64())])


def test_json_primary_key_table_upserts_deletes_and_serves_its_changelog(server):
    """A primary-key table with kafka.value.format=json: the key is a JSON object of the key
    columns, an update's "-U" is not served, a delete is a tombstone, and a key that disagrees
    with the value's key columns is refused."""
    table = "shop.pk_json_" + uuid.uuid4().hex[:8]
    server.create_table(table, ORDERS, primary_key=["id"], buckets=3,
                        properties={"kafka.value.format": "json"})
    key = lambda i: json.dumps({"id": i}).encode()  # noqa: E731
    row = lambda i, item, amount: json.dumps(  # noqa: E731
        {"id": i, "item": item, "amount": amount}).encode()
    # Partition -1: the client's partitioner sends each key to one partition, which keeps the
    # key's records in order (as in Kafka); the table puts each key in its own bucket.
    messages = [(-1, key(i), row(i, f"item-{i}", i * 1.0), None) for i in range(10)]
    messages += [(-1, key(i), row(i, f"again-{i}", i * 2.0), None) for i in range(0, 10, 2)]
    messages += [(-1, key(i), None, None) for i in range(0, 10, 5)]
    messages += [(-1, None, row(42, "no key", 4.2), None)]  # the value's key columns key it
    reports, queued = deliver({"bootstrap.servers": bootstrap(server), "linger.ms": 5},
                              table, messages)
    assert queued == 0 and all(err is None for err, _ in reports), reports[:3]
    expected = {i: {"id": i, "item": f"item-{i}", "amount": i * 1.0} for i in range(10)}
    for i in range(0, 10, 2):
        expected[i] = {"id": i, "item": f"again-{i}", "amount": i * 2.0}
    for i in range(0, 10, 5):
        del expected[i]
    expected[42] = {"id": 42, "item": "no key", "amount": 4.2}

    rows, _ = snapshot(server, table)
    assert {r["id"]: r for r in rows.to_pylist()} == expected
    changes = changelog(server, table, 3)
    served = [c for c in changes if c["_change_type"] != "-U"]
    assert len(served) < len(changes)  # the full image has "-U" rows, which Kafka leaves out
    got = consume_all(server, table, 3, len(served))
    state = replay(got, key=lambda m: json.loads(m.key())["id"],
                   value=lambda m: json.loads(m.value()))
    assert state == expected
    tombstones = [json.loads(m.key()) for m in got if m.value() is None]
    assert sorted(t["id"] for t in tombstones) == [0, 5]

    # A key that is not the value's key, and a tombstone's key that is no key, are refused.
    for bad in [(0, key(1), row(2, "x", 1.0), None), (0, b'{"item": "x"}', None, None)]:
        reports, queued = deliver({"bootstrap.servers": bootstrap(server), "retries": 0},
                                  table, [bad])
        assert reports[0][0] is not None and reports[0][0].code() == KafkaError.INVALID_RECORD
    rows, _ = snapshot(server, table)
    assert {r["id"]: r for r in rows.to_pylist()} == expected


def test_avro_primary_key_table_keys_and_values_are_avro(server):
    table = "shop.pk_avro_" + uuid.uuid4().hex[:8]
    server.create_table(table, ORDERS, primary_key=["id"], buckets=2,
                        properties={"kafka.value.format": "avro"})
    # The Avro schemas written from docs/kafka.md's mapping (not asked of the server).
    key_schema = fastavro.parse_schema({"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"}]})
    value_schema = fastavro.parse_schema({"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": ["null", "string"]},
        {"name": "amount", "type": ["null", "double"]}]})

    def avro(schema, datum) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, datum)
        return out.getvalue()

    producer = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 5})
    errors = []
    for i in range(6):
        producer.produce(table, key=avro(key_schema, {"id": i}),
                         value=avro(value_schema, {"id": i, "item": f"i{i}", "amount": None}),
                         on_delivery=lambda err, msg: errors.append(err))
    producer.produce(table, key=avro(key_schema, {"id": 4}), value=None,
                     on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0 and errors == [None] * 7

    got = consume_all(server, table, 2, 7)
    decode = lambda schema, raw: fastavro.schemaless_reader(io.BytesIO(raw), schema)  # noqa: E731
    state = replay(got, key=lambda m: decode(key_schema, m.key())["id"],
                   value=lambda m: decode(value_schema, m.value()))
    expected = {i: {"id": i, "item": f"i{i}", "amount": None} for i in range(6) if i != 4}
    assert state == expected
    rows, _ = snapshot(server, table)
    assert {r["id"]: r for r in rows.to_pylist()} == expected
