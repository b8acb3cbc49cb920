"""An idempotent librdkafka producer (confluent-kafka, enable.idempotence=true) keeps producing
while oxbowd is killed with SIGKILL and restarted, again and again: every record is acknowledged
and stored exactly once (docs/kafka.md#idempotent-producers). Retries of batches that were
appended just before a crash are recognised from the producer id and sequences stored with each
batch; batches lost with the crash (never acknowledged) are appended by the retry.
"""

from __future__ import annotations

import collections
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from oxbowtest.server import OxbowServer, free_port, oxbowd_binary

pytestmark = pytest.mark.crash

PARTITIONS = 2
CRASHES = 6


def test_idempotent_producer_exactly_once_through_sigkill_crashes(tmp_path):
    kafka_port = free_port()  # the same across restarts: the producer reconnects to it
    server = OxbowServer(oxbowd_binary(), tmp_path / "data", tmp_path / "oxbowd.log",
                         ("--kafka-listen", f"127.0.0.1:{kafka_port}"))
    server.start()
    bootstrap = f"127.0.0.1:{kafka_port}"
    topic = "crashloop"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS,
                                  replication_factor=1)])[topic].result(timeout=30)

    acked: list[bytes] = []
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked.append(msg.value())

    producer = Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2,
        "batch.num.messages": 50, "message.timeout.ms": 120_000, "retry.backoff.ms": 20,
        "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
        "socket.connection.setup.timeout.ms": 2000, "topic.metadata.refresh.interval.ms": 1000})
    sent = 0
    try:
        for crash in range(CRASHES + 1):
            # Produce for a while, with requests in flight when the kill comes.
            until = time.monotonic() + 1.0
            while time.monotonic() < until:
                for _ in range(100):
                    try:
                        producer.produce(topic, value=b"r%08d" % sent,
                                         partition=sent % PARTITIONS, on_delivery=on_delivery)
                    except BufferError:  # the client's queue is full (a slow restart): let it drain
                        producer.poll(0.1)
                        break
                    sent += 1
                producer.poll(0.005)
            if crash < CRASHES:
                server.kill()
                producer.poll(0.2)  # the producer sees the connections drop and retries
                server.start()
        assert producer.flush(120) == 0, "records never acknowledged"
    finally:
        if server.proc is not None:
            server.stop()
    assert not errors, errors[:5]
    assert len(acked) == sent

    server.start()
    try:
        stored = []
        for bucket in range(PARTITIONS):
            data, _ = server.get({"table": f"kafka.{topic}", "bucket": bucket})
            stored += data.column("value").to_pylist()
    finally:
        server.stop()
    counts = collections.Counter(stored)
    duplicated = [v for v, n in counts.items() if n > 1]
    assert not duplicated, f"{len(duplicated)} records stored twice, e.g. {duplicated[:3]}"
    assert counts.keys() == set(acked), "acknowledged records missing from the log"
    assert sent > 1000 * CRASHES
