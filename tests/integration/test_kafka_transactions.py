"""Kafka transactions (docs/kafka.md#transactions): librdkafka's transactional producer and Kafka's
own Java client (TransactionalMessageCopier, Kafka's exactly-once system-test tool) against
Oxbow. The tests taking `oxbow_or_kafka` run the same assertions against a real Kafka 4.4 broker.
Crash tests SIGKILL the copier, and oxbowd, mid-transaction: the output holds every input record
exactly once."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from oxbowtest.kafka import bootstrap, consume_assigned, create_topic, produce

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from vs_kafka import fetch_kafka  # noqa: E402


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def transactional(broker, txn_id: str, **config) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap(broker), "transactional.id": txn_id,
                         "linger.ms": 5, **config})
    producer.init_transactions(30)
    return producer


def read_committed(broker, topic: str, partitions: int, count: int, **config) -> list[bytes]:
    """Exactly `count` values a read_committed consumer gets from the partitions' start."""
    got = consume_assigned(broker, topic, partitions, count, exactly=True,
                           **{"isolation.level": "read_committed", **config})
    return [m.value() for m in got]


def test_committed_transactions_are_read_and_aborted_ones_never(oxbow_or_kafka):
    broker = oxbow_or_kafka
    topic = "txn-" + uuid.uuid4().hex[:10]
    create_topic(broker, topic, 2)
    producer = transactional(broker, "tx-" + topic)
    expected = []
    for round_, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, value=f"r{round_}-{i}".encode(), partition=i % 2)
        if commit:
            producer.commit_transaction(30)
            expected += [f"r{round_}-{i}".encode() for i in range(20)]
        else:
            producer.abort_transaction(30)
    assert sorted(read_committed(broker, topic, 2, len(expected))) == sorted(expected)
    # Within a partition, committed records keep the order they were produced in.
    for partition in range(2):
        values = [v.decode() for v in read_committed(broker, topic, [partition], len(expected) // 2)]
        assert values == [v.decode() for v in expected if int(v.decode().split("-")[1]) % 2 ==
                          partition]


def test_open_transaction_is_invisible_until_it_commits(oxbow_or_kafka):
    broker = oxbow_or_kafka
    topic = "txn-open-" + uuid.uuid4().hex[:10]
    create_topic(broker, topic, 1)
    producer = transactional(broker, "tx-" + topic)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0  # acknowledged, not committed
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": "g-" + topic,
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    assert consumer.poll(1.5) is None
    producer.commit_transaction(30)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(10)]


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(oxbow_or_kafka):
    broker = oxbow_or_kafka
    topic = "txn-fence-" + uuid.uuid4().hex[:10]
    create_topic(broker, topic, 1)
    txn_id = "tx-" + topic
    old = transactional(broker, txn_id)
    old.begin_transaction()
    old.produce(topic, value=b"zombie")
    assert old.flush(30) == 0
    new = transactional(broker, txn_id)  # fences `old`, aborting its transaction
    with pytest.raises(KafkaException) as fenced:
        old.commit_transaction(30)
    assert fenced.value.args[0].fatal(), fenced.value
    new.begin_transaction()
    new.produce(topic, value=b"alive")
    new.commit_transaction(30)
    assert read_committed(broker, topic, 1, 1) == [b"alive"]


def test_consume_transform_produce_commits_offsets_with_the_output(oxbow_or_kafka):
    broker = oxbow_or_kafka
    source, sink = "src-" + uuid.uuid4().hex[:10], "dst-" + uuid.uuid4().hex[:10]
    create_topic(broker, source, 2)
    create_topic(broker, sink, 1)
    produce(broker, source, [(i % 2, None, f"{i}".encode(), None) for i in range(100)])
    group = "ctp-" + source
    producer = transactional(broker, "tx-" + source)
    consumer = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([source])
    done, rounds = 0, 0
    deadline = time.monotonic() + 60
    while done < 100 and time.monotonic() < deadline:
        batch = consumer.consume(30, 1.0)
        if not batch:
            continue
        producer.begin_transaction()
        for m in batch:
            assert m.error() is None, m.error()
            producer.produce(sink, value=b"x" + m.value())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        # Every other round aborts: its input is read again from the last committed offsets.
        if rounds % 2 == 1:
            producer.abort_transaction(30)
            for tp in consumer.committed(consumer.assignment(), 30):
                consumer.seek(TopicPartition(tp.topic, tp.partition,
                                             tp.offset if tp.offset >= 0 else 0))
        else:
            producer.commit_transaction(30)
            done += len(batch)
        rounds += 1
    consumer.close()
    assert done == 100
    assert sorted(read_committed(broker, sink, 1, 100)) == sorted(
        f"x{i}".encode() for i in range(100))
    # The group's offsets moved with the committed transactions: to the end of each partition.
    checker = Consumer({"bootstrap.servers": bootstrap(broker), "group.id": group})
    committed = checker.committed([TopicPartition(source, p) for p in range(2)], 30)
    checker.close()
    assert [tp.offset for tp in committed] == [50, 50]


def test_a_compacted_topic_takes_transactions(oxbow_or_kafka):
    """On Oxbow a compacted topic is a primary-key table: a committed transaction's records upsert
    and delete keys at commit, an aborted one's never do."""
    broker = oxbow_or_kafka
    topic = "txn-compact-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                  config={"cleanup.policy": "compact"})])[topic].result(timeout=30)
    producer = transactional(broker, "tx-" + topic)
    for round_, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        for k in range(10):
            producer.produce(topic, key=f"k{k}".encode(), value=f"v{round_}".encode())
        producer.produce(topic, key=f"k{round_}".encode(), value=None)  # a tombstone
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    got = consume_assigned(broker, topic, 1, 22, exactly=True, **{"isolation.level":
                                                                  "read_committed"})
    state = {}
    for m in got:
        if m.value() is None:
            state.pop(m.key(), None)
        else:
            state[m.key()] = m.value()
    assert state == {f"k{k}".encode(): b"v2" for k in range(10) if k != 2}


def test_transactions_past_their_timeout_abort(server):
    topic = "txn-timeout-" + uuid.uuid4().hex[:10]
    create_topic(server, topic, 1)
    producer = transactional(server, "tx-" + topic, **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce(topic, value=b"late")
    assert producer.flush(30) == 0
    time.sleep(2.5)
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    fresh = transactional(server, "tx-" + topic)
    fresh.begin_transaction()
    fresh.produce(topic, value=b"on time")
    fresh.commit_transaction(30)
    assert read_committed(server, topic, 1, 1) == [b"on time"]


def test_refusals_name_the_problem(server):
    topic = "txn-bad-" + uuid.uuid4().hex[:10]
    create_topic(server, topic, 1)
    # A timeout over transaction.max.timeout.ms (15 minutes), as Kafka refuses it.
    producer = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": "tx-" + topic,
                         "transaction.timeout.ms": 900001})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(30)
    assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT
    # A record the table cannot hold (not JSON) is refused when produced, with its batch, and the
    # transaction can only abort; nothing of it is ever visible.
    table = "it.txn_json_" + uuid.uuid4().hex[:8]
    server.create_table(table, pa.schema([("id", pa.int64())]),
                        properties={"kafka.value.format": "json"})
    producer = transactional(server, "tx2-" + topic)
    producer.begin_transaction()
    errors = []
    for value in (b'{"id": 1}', b"not json"):
        producer.produce(table, value=value, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD] * 2, errors
    with pytest.raises(KafkaException) as failed:
        producer.commit_transaction(10)
    assert failed.value.args[0].txn_requires_abort(), failed.value
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(table, value=b'{"id": 2}')
    producer.commit_transaction(30)
    assert server.read_all(table).column("id").to_pylist() == [2]


def test_a_crash_keeps_committed_transactions_once_and_open_ones_open(make_server):
    server = make_server()
    server.stable_ports = True
    topic = "txn-crash-" + uuid.uuid4().hex[:10]
    create_topic(server, topic, 2)
    txn_id = "tx-" + topic
    producer = transactional(server, txn_id)
    producer.begin_transaction()
    for i in range(50):
        producer.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(50):
        producer.produce(topic, value=f"open{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    server.kill()
    server.start()
    # The open transaction survived the crash: its producer commits it.
    producer.commit_transaction(60)
    expected = [f"c{i}".encode() for i in range(50)] + [f"open{i}".encode() for i in range(50)]
    assert sorted(read_committed(server, topic, 2, 100)) == sorted(expected)
    # Through Flight too: committed rows only, once each.
    values = server.read_all("kafka." + topic).column("value").to_pylist()
    assert sorted(values) == sorted(expected)


def copier(classpath: str, broker, source: str, sink: str, txn_id: str, messages: int,
           log: pathlib.Path) -> subprocess.Popen:
    """Kafka's TransactionalMessageCopier: reads partition 0 of `source` in group mode, writes
    each record to `sink` in transactions of 10 that commit the input offsets (random aborts on),
    until `messages` are copied."""
    return subprocess.Popen(
        ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
         "org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list",
         bootstrap(broker), "--input-topic", source, "--input-partition", "0", "--output-topic",
         sink, "--max-messages", str(messages), "--transaction-size", "10",
         "--transactional-id", txn_id, "--consumer-group", "copier-" + txn_id,
         "--enable-random-aborts", "--transaction-timeout", "10000"],
        stdout=open(log, "ab"), stderr=subprocess.STDOUT)


def progress(log: pathlib.Path, since: int) -> int:
    """How many records the copier started after byte `since` of its log reports copied."""
    count = 0
    with open(log, "rb") as f:
        f.seek(since)
        for line in f.read().decode(errors="replace").splitlines():
            try:
                count = max(count, json.loads(line).get("totalProcessed", 0))
            except (json.JSONDecodeError, AttributeError):
                continue
    return count


def wait_for_progress(log: pathlib.Path, since: int, records: int) -> None:
    deadline = time.monotonic() + 120
    while progress(log, since) < records:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def test_java_copier_killed_mid_transaction_copies_exactly_once(make_server, tmp_path):
    classpath = fetch_kafka()
    server = make_server()
    server.stable_ports = True
    source, sink = "jsrc-" + uuid.uuid4().hex[:8], "jdst-" + uuid.uuid4().hex[:8]
    create_topic(server, source, 1)
    create_topic(server, sink, 1)
    total = 10000
    produce(server, source, [(0, None, f"m{i}".encode(), None) for i in range(total)])
    txn_id = "copier-" + source
    log = tmp_path / "copier.log"
    log.touch()
    # Each copier is killed with SIGKILL once it has copied 1,000 records, so mid-transaction
    # (transactions of 10, some aborted at random); during the third, oxbowd is killed too.
    for bounce in range(4):
        since = log.stat().st_size
        proc = copier(classpath, server, source, sink, txn_id, total, log)
        wait_for_progress(log, since, 1000)
        if bounce == 2:
            server.kill()
            server.start()
            since = log.stat().st_size
            wait_for_progress(log, since, 10)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # The last one runs to its end: every record remaining is copied, then it exits.
    proc = copier(classpath, server, source, sink, txn_id, total, log)
    assert proc.wait(timeout=240) == 0, log.read_text()[-3000:]
    values = read_committed(server, sink, 1, total)
    assert sorted(values) == sorted(f"m{i}".encode() for i in range(total))
