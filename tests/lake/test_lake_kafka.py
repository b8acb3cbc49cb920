"""Records produced through Oxbow's Kafka listener land in the lake (docs/kafka.md): the Iceberg
table of a Kafka topic, read with pyiceberg, holds every record at its Kafka partition (bucket)
and offset, with its key, value and timestamp."""

from __future__ import annotations

from oxbowtest.kafka import create_topic, produce
from oxbowtest.lake import assert_lake_equals_log, wait_lake


def test_kafka_records_reach_the_lake_at_their_offsets(lake_server):
    create_topic(lake_server, "clicks", 2)
    delivered = produce(lake_server, "clicks",
                        [(i % 2, f"user-{i % 7}".encode(), f"click {i}".encode(), None,
                          1_780_000_000_000 + i) for i in range(200)],
                        **{"compression.codec": "zstd"})
    acked = {(m.partition(), m.offset()): (m.key(), m.value(), m.timestamp()[1])
             for m in delivered}

    lake = wait_lake(lake_server, "kafka.clicks")
    rows = assert_lake_equals_log(lake_server, "kafka.clicks", lake["metadata_location"])
    in_lake = {(r["__bucket"], r["__offset"]): (r["key"], r["value"],
                                                int(r["timestamp"].timestamp() * 1000))
               for r in rows.to_pylist()}
    assert in_lake == acked
