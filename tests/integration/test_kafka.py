"""Oxbow's Kafka listener against real Kafka clients (docs/kafka.md): confluent-kafka (librdkafka)
and kafka-python produce and consume, consumer groups commit and resume across a restart, and what
goes in through Kafka comes out through Flight at the same offsets (and the other way round).

One oxbowd serves the module (make_server_module); topics are unique per test.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import resource
import socket
import struct
import time
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewTopic, OffsetSpec, ResourceType)

from oxbowtest.kafka import (bootstrap, consume_assigned, create_topic, deliver, exchange,
                             group_consumer, new_topic, poll_until, produce)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RAW_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()),
                        pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
                        ("headers", pa.binary())])


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def flight_rows(server, table: str, bucket: int) -> list[dict]:
    """The bucket's rows through Flight, each with its offset."""
    _, metas = server.get({"table": table, "bucket": bucket})
    data, _ = server.get({"table": table, "bucket": bucket})
    offsets = list(itertools.chain.from_iterable(range(m["base_offset"], m["next_offset"])
                                                 for m in metas))
    rows = data.to_pylist()
    assert len(rows) == len(offsets)
    return [dict(row, offset=o) for row, o in zip(rows, offsets)]


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_produces_and_consumes_every_codec(server, codec):
    topic = new_topic()
    create_topic(server, topic, 2)
    messages = [(i % 2, f"k{i}".encode() if i % 3 else None, f"value-{codec}-{i}".encode() * 20,
                 [("h", f"{i}".encode()), ("empty", None)] if i % 4 == 0 else None)
                for i in range(300)]
    reports = produce(server, topic, messages, **{"compression.codec": codec})
    sent = {value: (partition, key, headers) for partition, key, value, headers in messages}
    offsets = {(m.partition(), m.offset()): m.value() for m in reports}
    assert len(offsets) == 300
    for p in (0, 1):  # offsets are dense from 0 in each partition
        assert sorted(o for (part, o) in offsets if part == p) == list(range(150))

    consumed = consume_assigned(server, topic, 2, 300)
    for msg in consumed:
        assert msg.value() == offsets[(msg.partition(), msg.offset())]
        partition, key, headers = sent[msg.value()]
        assert (msg.partition(), msg.key(), msg.headers()) == (partition, key, headers)

    # The same rows through Flight, at the same offsets.
    for p in (0, 1):
        rows = flight_rows(server, "kafka." + topic, p)
        assert len(rows) == 150
        for row in rows:
            assert row["value"] == offsets[(p, row["offset"])]
            partition, key, headers = sent[row["value"]]
            assert row["key"] == key
            assert (row["headers"] is None) == (headers is None)


def test_kafka_python_produces_and_consumes(server):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTopicPartition

    topic = new_topic()  # auto-created by Metadata, with the default of 1 partition
    producer = KafkaProducer(bootstrap_servers=bootstrap(server), compression_type="gzip",
                             acks="all")
    futures = [producer.send(topic, key=b"k", value=f"v{i}".encode(), headers=[("n", b"%d" % i)])
               for i in range(100)]
    producer.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    assert offsets == list(range(100))
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap(server), enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    consumer.assign([KTopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got = [next(consumer) for _ in range(100)]
    consumer.close()
    assert [m.value for m in got] == [f"v{i}".encode() for i in range(100)]
    assert [m.offset for m in got] == list(range(100))
    assert [m.headers for m in got] == [[("n", b"%d" % i)] for i in range(100)]


def test_rows_put_through_flight_are_consumed_through_kafka(server):
    topic = new_topic()
    create_topic(server, topic, 1)
    batch = pa.record_batch([
        pa.array([b"a", None, b"c"], pa.binary()),
        pa.array([b"one", b"two", None], pa.binary()),
        pa.array([1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002],
                 pa.timestamp("ms", tz="UTC")),
        pa.array([None, None, None], pa.binary()),
    ], schema=RAW_SCHEMA)
    server.put("kafka." + topic, [batch])
    got = consume_assigned(server, topic, 1, 3)
    assert [(m.key(), m.value(), m.timestamp()[1], m.offset()) for m in got] == [
        (b"a", b"one", 1_700_000_000_000, 0), (None, b"two", 1_700_000_000_001, 1),
        (b"c", None, 1_700_000_000_002, 2)]


def test_idempotent_producer(server):
    topic = new_topic()
    create_topic(server, topic, 1)
    messages = [(0, None, f"m{i}".encode(), None) for i in range(500)]
    produce(server, topic, messages, **{"enable.idempotence": True, "compression.codec": "lz4"})
    got = consume_assigned(server, topic, 1, 500)
    assert [m.value() for m in got] == [f"m{i}".encode() for i in range(500)]


def test_list_offsets_and_delete_topics(server):
    topic = new_topic()
    create_topic(server, topic, 1)
    produce(server, topic, [(0, None, b"x", None)] * 7)
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "wm-" + topic})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 7)
    consumer.close()
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    with pytest.raises(Exception) as exc:  # already exists
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=30)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    admin.delete_topics([topic])[topic].result(timeout=30)
    tables = [t["table"] for t in server.action("list_tables")["tables"]]
    assert "kafka." + topic not in tables


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_consumer_group_rebalances_commits_and_resumes_after_restart(server, assignor):
    topic = new_topic()
    group = "g-" + topic
    create_topic(server, topic, 2)
    first = group_consumer(server, group, topic, **{"partition.assignment.strategy": assignor})
    second = group_consumer(server, group, topic, **{"partition.assignment.strategy": assignor})
    deadline = time.monotonic() + 60  # until the group settled with one partition each
    while not (len(first.assignment()) == len(second.assignment()) == 1):
        assert time.monotonic() < deadline, "the group never gave each member one partition"
        for c in (first, second):
            assert c.poll(0.2) is None

    produce(server, topic, [(i % 2, None, f"a{i}".encode(), None) for i in range(40)])
    got = poll_until([first, second], 40)
    assert sorted(m.value() for v in got.values() for m in v) == sorted(
        f"a{i}".encode() for i in range(40))
    # Both members got one partition each.
    assert {len({m.partition() for m in v}) for v in got.values()} == {1}
    for c in (first, second):
        c.commit(asynchronous=False)
    second.close()  # LeaveGroup: `first` takes both partitions over
    deadline = time.monotonic() + 60
    while len(first.assignment()) != 2:
        assert time.monotonic() < deadline, "the remaining member never got both partitions"
        assert first.poll(0.2) is None

    produce(server, topic, [(i % 2, None, f"b{i}".encode(), None) for i in range(20)])
    later = poll_until([first], 20)[first]
    assert sorted(m.value() for m in later) == sorted(f"b{i}".encode() for i in range(20))
    assert {m.partition() for m in later} == {0, 1}
    first.commit(asynchronous=False)
    first.close()

    produce(server, topic, [(i % 2, None, f"c{i}".encode(), None) for i in range(10)])
    server.restart()  # offsets are durable in the data dir
    resumed = group_consumer(server, group, topic, **{"partition.assignment.strategy": assignor})
    after = poll_until([resumed], 10)[resumed]
    extra = resumed.poll(2.0)
    resumed.close()
    assert extra is None or extra.error() is not None
    assert sorted(m.value() for m in after) == sorted(f"c{i}".encode() for i in range(10))


def raw_request(server, payload: bytes) -> bytes | None:
    """Sends one size-prefixed frame; returns the response frame, or None if the server closed."""
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=10) as s:
        return exchange(s, payload)


def test_bad_frames_get_errors_or_a_closed_connection(server):
    # ApiVersions v99: answered in v0 with UNSUPPORTED_VERSION (35) and the versions served.
    reply = raw_request(server, struct.pack(">hhih", 18, 99, 7, -1))
    correlation, error = struct.unpack(">ih", reply[:6])
    assert (correlation, error) == (7, 35)
    # Unknown API key, an unserved version, garbage bodies: the connection closes.
    assert raw_request(server, struct.pack(">hhih", 999, 0, 1, -1)) is None
    assert raw_request(server, struct.pack(">hhih", 1, 99, 1, -1)) is None
    assert raw_request(server, struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff") is None
    # A frame over the limit (100 MiB) closes the connection before it is read.
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=10) as s:
        s.sendall(struct.pack(">i", 200 << 20))
        assert s.recv(4) == b""
    # Produce v0 is advertised (librdkafka needs it) but refused per partition.
    topic = new_topic()
    create_topic(server, topic, 1)
    name = topic.encode()
    produce_v0 = (struct.pack(">hhih", 0, 0, 9, -1) + struct.pack(">hii", 1, 1000, 1) +
                  struct.pack(">h", len(name)) + name + struct.pack(">iii", 1, 0, 0))
    reply = raw_request(server, produce_v0)
    assert struct.unpack(">i", reply[:4])[0] == 9
    assert struct.unpack(">h", reply[-10:-8])[0] == 35  # UNSUPPORTED_VERSION
    assert server.action("list_tables")["tables"]  # and the server is still fine


def test_long_poll_fetch_returns_when_data_arrives(server):
    topic = new_topic()
    create_topic(server, topic, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "lp-" + topic,
                         "fetch.wait.max.ms": 5000, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, 0, 0)])
    assert consumer.poll(1.0) is None  # a fetch is now parked on the server
    start = time.monotonic()
    produce(server, topic, [(0, None, b"late", None)])
    msg = consumer.poll(10)
    consumer.close()
    assert msg is not None and msg.value() == b"late"
    assert time.monotonic() - start < 4, "the parked fetch did not return when data arrived"


def proc_status_field(pid: int, field: str) -> int:
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(status.split(f"{field}:")[1].split()[0])


def rss_kb(pid: int) -> int:
    return proc_status_field(pid, "VmRSS")


def proc_threads(pid: int) -> int:
    return proc_status_field(pid, "Threads")


def test_a_thousand_idle_connections_cost_bounded_memory(server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    before = rss_kb(server.proc.pid)
    threads_before = proc_threads(server.proc.pid)
    socks = [socket.create_connection(("127.0.0.1", server.kafka_port)) for _ in range(1000)]
    try:
        api_versions_v0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)
        for s in socks:  # every connection is being served
            s.sendall(api_versions_v0)
        for s in socks:
            assert len(s.recv(4)) == 4
        grown_kb = rss_kb(server.proc.pid) - before
        grown_threads = proc_threads(server.proc.pid) - threads_before
        print(f"\n1000 idle connections: +{grown_kb} KB RSS, +{grown_threads} threads")
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # Idle connections wait in the event loop, not on threads; the workers that answered the
    # ApiVersions burst are a handful (they end when idle).
    assert grown_threads < 50, f"1000 idle connections grew oxbowd by {grown_threads} threads"
    assert grown_kb < 16 * 1000, f"1000 idle connections grew RSS by {grown_kb} KB"


def api_versions_v0(correlation_id: int) -> bytes:
    return struct.pack(">ihhih", 10, 18, 0, correlation_id, -1)


def read_frames(sock: socket.socket, count: int) -> list[bytes]:
    """`count` size-prefixed response frames."""
    reader = sock.makefile("rb")
    frames = []
    for _ in range(count):
        size = struct.unpack(">i", reader.read(4))[0]
        frames.append(reader.read(size))
    return frames


def test_pipelined_requests_are_answered_in_order(server):
    """Far more requests in one write than the 5 read ahead of an answer: reading the connection
    pauses and resumes, and every answer comes back, in request order."""
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=30) as sock:
        sock.sendall(b"".join(api_versions_v0(i) for i in range(200)))
        frames = read_frames(sock, 200)
    assert [struct.unpack(">i", f[:4])[0] for f in frames] == list(range(200))
    assert all(struct.unpack(">h", f[4:6])[0] == 0 for f in frames), "an ApiVersions error"


def test_a_request_that_arrives_a_byte_at_a_time_is_answered(server):
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for byte in api_versions_v0(7) + api_versions_v0(8):
            sock.sendall(bytes([byte]))
            time.sleep(0.001)
        frames = read_frames(sock, 2)
    assert [struct.unpack(">i", f[:4])[0] for f in frames] == [7, 8]


def test_large_messages_round_trip(server):
    """A Produce frame of several MB is read in more than one piece."""
    topic = new_topic()
    create_topic(server, topic, 1)
    values = [bytes([i]) * (900_000 + i) for i in range(5)]
    produce(server, topic, [(0, None, v, None) for v in values],
            **{"message.max.bytes": 10_000_000, "linger.ms": 50})
    got = consume_assigned(server, topic, 1, len(values),
                           **{"fetch.max.bytes": 50_000_000,
                              "max.partition.fetch.bytes": 10_000_000})
    assert [m.value() for m in got] == values


def test_a_client_gone_with_requests_unanswered_leaves_others_served(server):
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", server.kafka_port))
        sock.sendall(b"".join(api_versions_v0(i) for i in range(50)))
        sock.close()
    with socket.create_connection(("127.0.0.1", server.kafka_port), timeout=30) as sock:
        sock.sendall(api_versions_v0(1))
        assert struct.unpack(">i", read_frames(sock, 1)[0][:4])[0] == 1


def earliest_offset(server, table: str) -> int:
    return server.describe(table)["bucket_offsets"][0]["earliest_offset"]


def first_offset_at(server, topic: str, timestamp_ms: int) -> int:
    """offsetsForTimes of partition 0."""
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "t-" + topic})
    found = consumer.offsets_for_times([TopicPartition(topic, 0, timestamp_ms)], timeout=10)
    consumer.close()
    return found[0].offset


def test_topic_retention_configs_are_kept_and_enforced(make_server):
    """retention.bytes and retention.ms at CreateTopics and IncrementalAlterConfigs (confluent-
    kafka's AdminClient) are the table's log.retention properties: DescribeConfigs shows them
    as the topic's own, and retention deletes the topic's old segments by them while a topic
    without them keeps the server's default (here: everything for a week)."""
    server = make_server(extra_args=("--segment-bytes", "4096"))
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    limited, unlimited = new_topic(), new_topic()
    # Out of the lake: a lake table's retention waits for tiering (lake.* configs are its
    # table properties).
    futures = admin.create_topics([
        NewTopic(limited, num_partitions=1,
                 config={"retention.bytes": "8192", "lake.enabled": "false"}),
        NewTopic(unlimited, num_partitions=1, config={"lake.enabled": "false"})])
    for f in futures.values():
        f.result(timeout=30)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, limited)])
    entries = next(iter(described.values())).result(timeout=30)
    assert entries["retention.bytes"].value == "8192"
    assert entries["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["lake.enabled"].value == "false"
    value = b"x" * 200
    for topic in (limited, unlimited):
        for _ in range(20):  # 20 requests: 20 batches of about 4.5 KB, a segment each
            produce(server, topic, [(0, None, value, None)] * 20)
    wait_for_earliest = time.monotonic() + 10
    while earliest_offset(server, "kafka." + limited) == 0:
        assert time.monotonic() < wait_for_earliest, "retention.bytes removed nothing"
        time.sleep(0.05)
    assert earliest_offset(server, "kafka." + unlimited) == 0
    assert first_offset_at(server, unlimited, 0) == 0  # indexes the record times (RecordTimes)

    # The unlimited topic gets a one-millisecond retention: the next roll removes what is sealed.
    resource = ConfigResource(ResourceType.TOPIC, unlimited, incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(timeout=30)
    assert server.describe("kafka." + unlimited)["properties"]["log.retention"] == "1ms"
    for _ in range(2):
        produce(server, unlimited, [(0, None, value, None)] * 20)
    deadline = time.monotonic() + 10
    while earliest_offset(server, "kafka." + unlimited) == 0:
        assert time.monotonic() < deadline, "retention.ms removed nothing"
        time.sleep(0.05)
    # Offsets for times start where retention left the partition (the time index follows it).
    earliest = earliest_offset(server, "kafka." + unlimited)
    assert first_offset_at(server, unlimited, 0) == earliest

    refused = admin.create_topics([NewTopic(new_topic(), num_partitions=1,
                                            config={"flush.messages": "1"})])
    with pytest.raises(KafkaException) as error:
        next(iter(refused.values())).result(timeout=30)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "flush.messages" in error.value.args[0].str()
    refused = admin.create_topics([NewTopic(new_topic(), num_partitions=1,
                                            config={"lake.enable": "false"})])  # a typo
    with pytest.raises(KafkaException) as error:
        next(iter(refused.values())).result(timeout=30)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "lake.enable" in error.value.args[0].str()


def test_timestamp_type_and_segment_bytes_are_topic_configs(oxbow_or_kafka):
    """message.timestamp.type LogAppendTime stamps records with the server's time, CreateTime
    (the default) keeps the producer's; segment.bytes is the topic's own. Both at CreateTopics,
    shown by DescribeConfigs. The same assertions against a real Kafka 4.4 broker."""
    broker = oxbow_or_kafka
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    stamped, kept = new_topic(), new_topic()
    futures = admin.create_topics([
        NewTopic(stamped, num_partitions=1, config={"message.timestamp.type": "LogAppendTime",
                                                    "segment.bytes": "1048576"}),
        NewTopic(kept, num_partitions=1)])
    for f in futures.values():
        f.result(timeout=30)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, stamped),
                                        ConfigResource(ResourceType.TOPIC, kept)])
    configs = {r.name: f.result(timeout=30) for r, f in described.items()}
    assert configs[stamped]["message.timestamp.type"].value == "LogAppendTime"
    assert configs[stamped]["segment.bytes"].value == "1048576"
    assert configs[stamped]["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs[kept]["message.timestamp.type"].value == "CreateTime"
    old = int(time.time() * 1000) - 600_000
    before = int(time.time() * 1000)
    for topic in (stamped, kept):
        produce(broker, topic, [(0, None, b"v", None, old)])
    got = {topic: consume_assigned(broker, topic, 1, 1)[0].timestamp() for topic in (stamped, kept)}
    kind, stamp = got[stamped]
    assert kind == 2 and before <= stamp <= int(time.time() * 1000) + 1, got  # LogAppendTime
    assert got[kept] == (1, old)  # CreateTime


def test_compression_type_and_max_message_bytes_are_topic_configs(oxbow_or_kafka):
    """compression.type is the codec of the batches consumers fetch (the producer's is "producer",
    the default); max.message.bytes bounds the batches producers send (MESSAGE_TOO_LARGE above
    it). Both at CreateTopics and by IncrementalAlterConfigs, shown by DescribeConfigs. The same
    assertions against a real Kafka 4.4 broker."""
    from kafka.protocol.consumer import FetchRequest
    from test_kafka_versions import Connection

    broker = oxbow_or_kafka
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    zstd, plain = new_topic(), new_topic()
    futures = admin.create_topics([
        NewTopic(zstd, num_partitions=1, config={"compression.type": "zstd",
                                                 "max.message.bytes": "10000"}),
        NewTopic(plain, num_partitions=1)])
    for f in futures.values():
        f.result(timeout=30)
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in (zstd, plain)]
    # A real Kafka broker may not know a topic for some ms after creating it.
    deadline = time.monotonic() + 10
    while True:
        try:
            configs = {r.name: f.result(timeout=30)
                       for r, f in admin.describe_configs(resources).items()}
            break
        except KafkaException as e:
            if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert configs[zstd]["compression.type"].value == "zstd"
    assert configs[zstd]["max.message.bytes"].value == "10000"
    assert configs[zstd]["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs[plain]["compression.type"].value == "producer"

    reports, queued = deliver({"bootstrap.servers": bootstrap(broker)}, zstd,
                              [(0, None, bytes(range(256)) * 80, None)])  # 20 KB
    assert queued == 0 and reports[0][0].code() == KafkaError.MSG_SIZE_TOO_LARGE, reports
    values = [f"value {i} ".encode() * 20 for i in range(50)]
    produce(broker, zstd, [(0, None, v, None) for v in values])
    assert [m.value() for m in consume_assigned(broker, zstd, 1, 50)] == values
    conn = Connection(broker.kafka_port)
    F = FetchRequest.FetchTopic
    response = conn.call(FetchRequest[12](
        max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        topics=[F(topic=zstd, partitions=[F.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id=""), 12)
    conn.close()
    records = response.responses[0].partitions[0].records
    # Record batch v2: attributes (int16) at byte 21, the codec in bits 0-2 (4: zstd).
    assert struct.unpack(">h", records[21:23])[0] & 7 == 4

    # Altered: no limit on size left but the server's, the codec back to the producer's.
    altered = admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, zstd, incremental_configs=[
            ConfigEntry("max.message.bytes", "2000000",
                        incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE)])])
    for f in altered.values():
        f.result(timeout=30)
    # Kafka applies an alter through its metadata log: a describe may show the old value briefly.
    deadline = time.monotonic() + 10
    while True:
        configs = admin.describe_configs(resources[:1])[resources[0]].result(timeout=30)
        if configs["compression.type"].value == "producer" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert configs["compression.type"].value == "producer"
    assert configs["max.message.bytes"].value == "2000000"
    produce(broker, zstd, [(0, None, bytes(range(256)) * 80, None)])
    refused = admin.create_topics([NewTopic(new_topic(), num_partitions=1,
                                            config={"compression.type": "brotli"})])
    with pytest.raises(KafkaException) as error:
        next(iter(refused.values())).result(timeout=30)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG


def test_offsets_for_times_go_by_record_timestamps(oxbow_or_kafka):
    """A raw topic's records keep the producer's timestamps (CreateTime), and ListOffsets by a
    time (offsetsForTimes) or by the max timestamp (-3, KIP-734) answers by them, as Kafka does:
    the first record in log order at or after the time, and the first record with the largest
    timestamp. The same assertions against a real Kafka 4.4 broker."""
    broker = oxbow_or_kafka
    topic, empty = new_topic(), new_topic()
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    for t in (topic, empty):
        admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1)])[t].result(30)
    base = int(time.time() * 1000) - 600_000  # ten minutes ago: inside Kafka's accepted range
    # Four batches; the second holds two records whose times go backwards.
    for batch in ([1000], [5000, 3000], [7000], [2000]):
        produce(broker, topic, [(0, None, str(t).encode(), None, base + t) for t in batch])
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": "times-" + topic})
    for at, offset in ((500, 0), (1000, 0), (1500, 1), (2500, 1), (4000, 1), (5001, 3),
                       (7000, 3), (7001, -1)):
        found = consumer.offsets_for_times([TopicPartition(topic, 0, base + at)], timeout=10)
        assert found[0].offset == offset, (at, found[0])
    consumer.close()
    tp, tpe = TopicPartition(topic, 0), TopicPartition(empty, 0)
    newest = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(timeout=30)
    assert (newest.offset, newest.timestamp) == (3, base + 7000)
    nothing = admin.list_offsets({tpe: OffsetSpec.max_timestamp()})[tpe].result(timeout=30)
    assert (nothing.offset, nothing.timestamp) == (-1, -1)


def test_json_tables_list_offsets_by_append_time(server):
    """A JSON table keeps no record timestamp: its records carry their batch's append time
    (LogAppendTime), and ListOffsets answers by it: -3 gives the first offset of the newest
    batch, a time the first batch appended at or after it."""
    table = "shop.times_" + uuid.uuid4().hex[:8]
    server.create_table(table, pa.schema([pa.field("id", pa.int64(), nullable=False)]),
                        properties={"kafka.value.format": "json"})
    for batch in ([1, 2, 3], [4, 5]):
        produce(server, table, [(0, None, json.dumps({"id": i}).encode(), None, 1000)
                                for i in batch])
    _, metas = server.get({"table": table})
    assert [m["base_offset"] for m in metas] == [0, 3]
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    tp = TopicPartition(table, 0)
    newest = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(timeout=30)
    assert (newest.offset, newest.timestamp) == (3, metas[-1]["append_time_ms"])
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "t-" + table})
    found = consumer.offsets_for_times([TopicPartition(table, 0, metas[-1]["append_time_ms"])])
    consumer.close()
    assert found[0].offset == 3


def test_json_table_created_through_flight(server):
    """A table with its own schema and kafka.value.format=json takes JSON objects as values and
    serves its rows (also those put through Flight) as JSON."""
    table = "shop.orders_" + uuid.uuid4().hex[:8]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("item", pa.string()),
                        ("amount", pa.float64()), ("at", pa.timestamp("ms", tz="UTC"))])
    server.create_table(table, schema, buckets=2,
                        properties={"kafka.value.format": "json"})
    orders = [{"id": i, "item": f"item-{i}", "amount": i * 1.5,
               "at": f"2026-01-01T00:00:{i:02d}.000Z"} for i in range(20)]
    produce(server, table, [(i % 2, None, json.dumps(o).encode(), None)
                            for i, o in enumerate(orders)])
    server.put(table, [pa.record_batch([[100], ["flight"], [None], [None]], schema=schema)])

    rows = server.read_all(table).to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(20)) + [100]
    assert {r["id"]: r["amount"] for r in rows}[7] == 10.5
    got = consume_assigned(server, table, 2, 21)
    by_id = {json.loads(m.value())["id"]: json.loads(m.value()) for m in got}
    assert by_id[3] == {"id": 3, "item": "item-3", "amount": 4.5,
                        "at": "2026-01-01T00:00:03.000Z"}
    assert by_id[100] == {"id": 100, "item": "flight", "amount": None, "at": None}

    # A value that is no row of the table fails the produce (test_kafka_versions checks the
    # message names the record).
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap(server), "linger.ms": 50, "retries": 0})
    for value in (b'{"id": 1}', b'{"id": "not a number"}'):
        producer.produce(table, value=value, partition=0,
                         on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 2 and all(e is not None for e in errors)
    assert errors[0].code() == KafkaError.INVALID_RECORD, errors[0]
    assert server.read_all(table).num_rows == 21  # nothing of the refused batch was appended


def test_avro_table_created_through_flight(server):
    """kafka.value.format=avro: values are plain Avro datums of the record schema docs/kafka.md
    derives from the table's columns; fastavro writes what is produced and reads what is
    fetched, rows put through Flight included."""
    import decimal
    import io

    import fastavro

    table = "shop.avro_" + uuid.uuid4().hex[:8]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("small", pa.int16()),
                        ("flag", pa.bool_()), ("item", pa.string()), ("blob", pa.binary()),
                        ("ratio", pa.float32()), ("amount", pa.float64()),
                        ("price", pa.decimal128(10, 2)), ("day", pa.date32()),
                        ("at", pa.timestamp("us", tz="UTC")), ("code", pa.binary(3))])
    server.create_table(table, schema, properties={"kafka.value.format": "avro"})
    # The Avro schema written from docs/kafka.md's mapping (not asked of the server).
    nullable = lambda t: ["null", t]  # noqa: E731
    avro_schema = fastavro.parse_schema({"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"},
        {"name": "small", "type": nullable("int")},
        {"name": "flag", "type": nullable("boolean")},
        {"name": "item", "type": nullable("string")},
        {"name": "blob", "type": nullable("bytes")},
        {"name": "ratio", "type": nullable("float")},
        {"name": "amount", "type": nullable("double")},
        {"name": "price", "type": nullable({"type": "bytes", "logicalType": "decimal",
                                            "precision": 10, "scale": 2})},
        {"name": "day", "type": nullable({"type": "int", "logicalType": "date"})},
        {"name": "at", "type": nullable({"type": "long", "logicalType": "timestamp-micros"})},
        {"name": "code", "type": nullable({"type": "fixed", "name": "code_fixed", "size": 3})}]})
    import datetime
    rows = [{"id": i, "small": -i, "flag": i % 2 == 0, "item": f"item-{i}", "blob": bytes([i]),
             "ratio": 0.5 * i, "amount": i * 1.25, "price": decimal.Decimal(f"-{i}.0{i}"),
             "day": datetime.date(2026, 1, 1 + i),
             "at": datetime.datetime(2026, 1, 1, 0, 0, i, 123456, tzinfo=datetime.timezone.utc),
             "code": b"ab" + bytes([48 + i])} for i in range(5)]
    rows.append({"id": 99, **{k: None for k in schema.names if k != "id"}})

    def encode(row) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, avro_schema, row)
        return out.getvalue()

    produce(server, table, [(0, None, encode(r), None) for r in rows])
    stored = server.read_all(table).to_pylist()
    assert [r["id"] for r in stored] == [0, 1, 2, 3, 4, 99]
    assert stored[3]["price"] == decimal.Decimal("-3.03") and stored[3]["small"] == -3
    assert stored[2]["at"] == rows[2]["at"] and stored[4]["code"] == b"ab4"
    server.put(table, [pa.record_batch(
        [[100], [7], [True], ["flight"], [b"\x00\xff"], [1.5], [2.5],
         [decimal.Decimal("12345678.91")], [datetime.date(1969, 12, 31)], [None], [b"xyz"]],
        schema=schema)])
    got = consume_assigned(server, table, 1, 7)
    decoded = [fastavro.schemaless_reader(io.BytesIO(m.value()), avro_schema) for m in got]
    assert decoded[:6] == rows
    assert decoded[6] == {"id": 100, "small": 7, "flag": True, "item": "flight",
                          "blob": b"\x00\xff", "ratio": 1.5, "amount": 2.5,
                          "price": decimal.Decimal("12345678.91"),
                          "day": datetime.date(1969, 12, 31), "at": None, "code": b"xyz"}

    # A value that is no datum of the schema (here with a Confluent header) fails the produce.
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap(server), "retries": 0})
    producer.produce(table, value=b"\x00\x00\x00\x00\x01" + encode(rows[0]), partition=0,
                     on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors
    assert server.read_all(table).num_rows == 7
