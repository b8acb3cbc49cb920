"""Records produced through Oxbow's Kafka listener land in the lake (docs/kafka.md): the Iceberg
table of a Kafka topic, read with pyiceberg, holds every record at its Kafka partition (bucket)
and offset, with its key, value and timestamp."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from oxbowtest.lake import assert_lake_equals_log, wait_lake


def test_kafka_records_reach_the_lake_at_their_offsets(lake_server):
    bootstrap = f"127.0.0.1:{lake_server.kafka_port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("clicks", num_partitions=2)])["clicks"].result(timeout=30)
    acked = {}

    def on_delivery(err, msg):
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), msg.timestamp()[1])

    producer = Producer({"bootstrap.servers": bootstrap, "compression.codec": "zstd",
                         "linger.ms": 5})
    for i in range(200):
        producer.produce("clicks", key=f"user-{i % 7}".encode(), value=f"click {i}".encode(),
                         partition=i % 2, timestamp=1_780_000_000_000 + i,
                         on_delivery=on_delivery)
    assert producer.flush(30) == 0

    lake = wait_lake(lake_server, "kafka.clicks")
    rows = assert_lake_equals_log(lake_server, "kafka.clicks", lake["metadata_location"])
    in_lake = {(r["__bucket"], r["__offset"]): (r["key"], r["value"],
                                                int(r["timestamp"].timestamp() * 1000))
               for r in rows.to_pylist()}
    assert in_lake == acked
