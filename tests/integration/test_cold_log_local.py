"""The cold log with a local-directory warehouse: the same seam as S3 (tests/s3/test_cold_log.py),
so the move, the manifest and the read-back are covered without an S3 server."""

from __future__ import annotations

import time

from oxbowtest.cold_log import (SCHEMA, SERVER_ARGS, Follower, assert_exact, bucket,
                                create, produce, read, wait_cold)
from oxbowtest.flight import expect_error


def test_cold_segments_move_to_the_warehouse_and_read_back(make_server, tmp_path, table_name):
    warehouse = tmp_path / "wh"
    server = make_server(extra_args=("--warehouse", str(warehouse), *SERVER_ARGS))
    table_id = create(server, table_name)["table_id"]
    rows = produce(server, table_name, 0, 30)
    wait_cold(server, table_name, 3)
    deadline = time.monotonic() + 30
    while bucket(server, table_name)["local_segments"] > 1:
        assert time.monotonic() < deadline, bucket(server, table_name)
        time.sleep(0.1)
    status = bucket(server, table_name)
    cold_dir = warehouse / "_log" / str(table_id) / "0"
    cold = {p.name for p in cold_dir.glob("*.log")}
    local = {p.name for p in (server.data_dir / "tables" / str(table_id) / "0").glob("*.log")}
    assert len(cold) == status["cold"]["segments"] >= 3 and len(local) == 1
    assert not cold & local
    assert (server.data_dir / "tables" / str(table_id) / "0" / "cold-segments").is_file()
    assert_exact(server, table_name, rows)

    follower = Follower(server, table_name, 600)
    try:
        assert follower.collect(rows - 500) == list(range(500, rows))
        more = produce(server, table_name, rows, 2)
        assert follower.collect(more - rows) == list(range(rows, more))
    finally:
        follower.cancel()

    server.restart()
    assert_exact(server, table_name, more)
    got, _ = read(server, table_name, start=1234)
    assert got.column("id").to_pylist() == list(range(1000, more))


def test_bad_local_retention_is_refused(make_server, table_name):
    server = make_server()
    with expect_error("INVALID_ARGUMENT", "log.local.retention", "not a duration"):
        server.create_table(table_name, SCHEMA, properties={"log.local.retention": "soon"})


def test_kafka_consumers_read_cold_segments(make_server, tmp_path):
    """Kafka Fetch goes through the same log read as DoGet: a consumer from offset 0 gets every
    record once, the old ones from cold segments."""
    import pyarrow as pa
    from confluent_kafka import Consumer, Producer, TopicPartition

    from oxbowtest.cold_log import PROPERTIES
    raw = pa.schema([("key", pa.binary()), ("value", pa.binary()),
                     pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
                     ("headers", pa.binary())])
    server = make_server(extra_args=("--warehouse", str(tmp_path / "wh"), *SERVER_ARGS))
    server.create_table("kc.t", raw, buckets=1, properties=PROPERTIES)
    bootstrap = f"127.0.0.1:{server.kafka_port}"
    values = [b"v%06d-" % i + b"x" * 200 for i in range(3000)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):  # 30 flushes: 30 batches, so segments roll
        producer.produce("kc.t", value=value, partition=0)
        if i % 100 == 99:
            assert producer.flush(30) == 0
    wait_cold(server, "kc.t", 3)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cold-kc",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("kc.t", 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append((msg.offset(), msg.value()))
    consumer.close()
    assert got == list(enumerate(values))
