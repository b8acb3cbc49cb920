"""Kafka clients against oxbowd's Kafka listener: topics, librdkafka producers and consumers, and
raw size-prefixed request frames."""

from __future__ import annotations

import struct
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def bootstrap(server) -> str:
    return f"127.0.0.1:{server.kafka_port}"


def new_topic() -> str:
    return "t" + uuid.uuid4().hex[:12]


def create_topic(server, topic: str, partitions: int, **config) -> None:
    """`config`: more client settings, e.g. SASL and TLS."""
    admin = AdminClient({"bootstrap.servers": bootstrap(server), **config})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(timeout=30)


def deliver(config: dict, topic: str, messages) -> tuple[list, int]:
    """Produces (partition, key, value, headers[, timestamp ms]) tuples with the client settings
    `config`; returns the (error, message) delivery reports in order and how many messages were
    still queued after 30 s."""
    reports = []
    producer = Producer(config)
    for partition, key, value, headers, *timestamp in messages:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers,
                         timestamp=timestamp[0] if timestamp else 0,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    queued = producer.flush(30)
    return reports, queued


def produce(server, topic: str, messages, **config) -> list:
    """deliver() with linger.ms 5 and `config`; every message must be delivered. Returns the
    delivered messages in order."""
    reports, queued = deliver({"bootstrap.servers": bootstrap(server), "linger.ms": 5, **config},
                              topic, messages)
    for err, _ in reports:
        assert err is None, err
    assert queued == 0
    return [msg for _, msg in reports]


def consume_assigned(server, topic: str, partitions: int | list[int], count: int,
                     start: int = 0, exactly: bool = False, **config) -> list:
    """`count` messages of the partitions (a count: 0..n-1) read from offset `start` (or
    OFFSET_BEGINNING...); with `exactly`, no more arrive within a second after them."""
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "assign-" + topic,
                         "enable.auto.commit": False, **config})
    chosen = range(partitions) if isinstance(partitions, int) else partitions
    consumer.assign([TopicPartition(topic, p, start) for p in chosen])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append(msg)
    extra = consumer.poll(1.0) if exactly else None
    consumer.close()
    assert len(got) == count, f"consumed {len(got)} of {count}"
    assert extra is None, f"more than {count}: {extra.key()!r} {extra.value()!r}"
    return got


def group_consumer(server, group: str, topic: str, **config) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 15000, "heartbeat.interval.ms": 500,
                         "max.poll.interval.ms": 20000, **config})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumers, want: int, timeout: float = 60) -> dict:
    """Polls the consumers in turn until `want` messages arrived; returns consumer -> messages."""
    got = {c: [] for c in consumers}
    deadline = time.monotonic() + timeout
    while sum(len(v) for v in got.values()) < want and time.monotonic() < deadline:
        for c in consumers:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got[c].append(msg)
    return got


def exchange(sock, payload: bytes) -> bytes | None:
    """Sends `payload` as one size-prefixed frame; returns the response frame, or None when the
    server closed the connection."""
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    head = sock.recv(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">i", head)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body
