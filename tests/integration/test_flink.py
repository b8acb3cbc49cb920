"""Flink SQL on Oxbow through Flink's own Kafka connectors (docs/flink.md): a `kafka` source on a
log table written through Flight and Kafka, a `kafka` sink into another log table, and an
`upsert-kafka` sink into a primary-key table whose snapshot, lookups and Iceberg copy then equal
what Flink computed, and an exactly-once sink (Kafka transactions) through a SIGKILL of oxbowd.
Flink 2.2 runs in one JVM (tests/oxbowtest/flink.py), once per job."""

from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pytest
import requests

from oxbowtest.flink import job_output, run_sql, start_sql
from oxbowtest.kafka import bootstrap, produce
from oxbowtest.lake import lake_rows, wait_lake
from oxbowtest.primary_keys import delete, do_get, snapshot

ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("customer", pa.string()),
                    ("amount", pa.int64())])
TOTALS = pa.schema([pa.field("customer", pa.string(), nullable=False),
                    ("orders", pa.int64()), ("total", pa.int64())])


def registry_url(server) -> str:
    return f"http://127.0.0.1:{server.registry_port}"


@pytest.fixture
def lake_server(make_lake_server):
    return make_lake_server()


def test_flink_sql_reads_log_tables_and_upserts_a_primary_key_table(lake_server, tmp_path):
    server = lake_server
    tag = uuid.uuid4().hex[:8]
    orders, big, totals = f"shop.orders_{tag}", f"shop.big_{tag}", f"shop.totals_{tag}"
    summary = f"shop.summary_{tag}"
    json_values = {"kafka.value.format": "json"}
    server.create_table(orders, ORDERS, buckets=2, properties=json_values)
    server.create_table(big, ORDERS, buckets=2, properties=json_values)
    server.create_table(totals, TOTALS, primary_key=["customer"], buckets=3,
                        properties={**json_values, "lake.enabled": "true"})

    # 300 orders: half put through Flight, half produced through Kafka.
    rows = [{"id": i, "customer": f"c{i % 17}", "amount": (i * 37) % 100} for i in range(300)]
    server.put(orders, [pa.RecordBatch.from_pylist(rows[:150], schema=ORDERS)])
    produce(server, orders, [(i % 2, None, json.dumps(r).encode(), None)
                             for i, r in enumerate(rows[150:])])

    kafka = f"'properties.bootstrap.servers' = '{bootstrap(server)}'"
    run_sql(f"""
CREATE TABLE orders (id BIGINT, customer STRING, amount BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{orders}', {kafka},
  'properties.group.id' = 'flink-{tag}', 'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE big_orders (id BIGINT, customer STRING, amount BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{big}', {kafka}, 'format' = 'json',
  'sink.delivery-guarantee' = 'at-least-once');
CREATE TABLE totals (customer STRING, orders BIGINT, total BIGINT,
                     PRIMARY KEY (customer) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{totals}', {kafka},
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO big_orders SELECT id, customer, amount FROM orders WHERE amount >= 90;
INSERT INTO totals SELECT customer, COUNT(*), SUM(amount) FROM orders GROUP BY customer;
""", tmp_path)

    expected = {}
    for r in rows:
        count, total = expected.get(r["customer"], (0, 0))
        expected[r["customer"]] = (count + 1, total + r["amount"])
    got, _ = snapshot(server, totals)
    assert {r["customer"]: (r["orders"], r["total"]) for r in got.to_pylist()} == expected
    found, _ = do_get(server, {"table": totals, "lookup": {"customer": ["c3", "c16", "none"]}})
    assert [(r["customer"], r["orders"], r["total"]) for r in found.to_pylist()] == [
        ("c3", *expected["c3"]), ("c16", *expected["c16"])]
    big_rows = server.read_all(big).to_pylist()
    assert sorted(r["id"] for r in big_rows) == sorted(r["id"] for r in rows if r["amount"] >= 90)

    lake = wait_lake(server, totals)
    in_lake = lake_rows(lake["metadata_location"]).to_pylist()
    assert {r["customer"]: (r["orders"], r["total"]) for r in in_lake} == expected

    # The primary-key table as an upsert-kafka source: its changelog (tombstones for the two
    # customers deleted through Flight) materializes to its rows again.
    delete(server, totals, pa.record_batch([pa.array(["c0", "c1"])],
                                           schema=pa.schema([TOTALS.field("customer")])))
    for gone in ("c0", "c1"):
        del expected[gone]
    server.create_table(summary, TOTALS, primary_key=["customer"], properties=json_values)
    run_sql(f"""
CREATE TABLE totals (customer STRING, orders BIGINT, total BIGINT,
                     PRIMARY KEY (customer) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{totals}', {kafka},
  'properties.group.id' = 'flink-in-{tag}', 'key.format' = 'json', 'value.format' = 'json',
  'scan.bounded.mode' = 'latest-offset');
CREATE TABLE summary (customer STRING, orders BIGINT, total BIGINT,
                      PRIMARY KEY (customer) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{summary}', {kafka},
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO summary SELECT 'all', COUNT(*), SUM(total) FROM totals;
""", tmp_path)
    got, _ = snapshot(server, summary)
    assert got.to_pylist() == [{"customer": "all", "orders": len(expected),
                                "total": sum(t for _, t in expected.values())}]


def test_flink_avro_confluent_format_reads_and_writes_registry_framed_tables(make_server,
                                                                             tmp_path):
    """Flink's `avro-confluent` format against oxbowd's schema registry: the source looks each
    value's schema up by its id, the sink registers its own schema (a record of another name)
    under the table's subject, and the rows land in the table's columns."""
    server = make_server()
    tag = uuid.uuid4().hex[:8]
    source, sink = f"shop.src_{tag}", f"shop.dst_{tag}"
    for table in (source, sink):
        server.create_table(table, ORDERS, properties={"kafka.value.format": "avro-confluent"})
    rows = [{"id": i, "customer": None if i % 7 == 0 else f"c{i % 5}", "amount": i * 3}
            for i in range(200)]
    server.put(source, [pa.RecordBatch.from_pylist(rows, schema=ORDERS)])

    kafka = f"'properties.bootstrap.servers' = '{bootstrap(server)}'"
    avro = f"'format' = 'avro-confluent', 'avro-confluent.url' = '{registry_url(server)}'"
    run_sql(f"""
CREATE TABLE src (id BIGINT NOT NULL, customer STRING, amount BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{source}', {kafka}, {avro},
  'properties.group.id' = 'flink-{tag}', 'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset');
CREATE TABLE dst (id BIGINT NOT NULL, customer STRING, amount BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{sink}', {kafka}, {avro},
  'sink.delivery-guarantee' = 'at-least-once');
INSERT INTO dst SELECT id, UPPER(customer), amount + 1 FROM src;
""", tmp_path)
    expected = [{"id": r["id"], "customer": r["customer"] and r["customer"].upper(),
                 "amount": r["amount"] + 1} for r in rows]
    assert sorted(server.read_all(sink).to_pylist(), key=lambda r: r["id"]) == expected
    versions = requests.get(f"{registry_url(server)}/subjects/{sink}-value/versions").json()
    assert versions == [1]  # Flink's schema encodes as the table's: no new version


def test_flink_exactly_once_sink_survives_a_sigkill_of_oxbowd(make_server, tmp_path):
    """An exactly-once `kafka` sink (Kafka transactions, committed at each checkpoint) writing a
    sequence of 4,000 ids at 500 a second; oxbowd is SIGKILLed mid-job and restarted on the same
    ports. Flink restarts the job from its last checkpoint: the table holds every id once."""
    server = make_server()
    server.stable_ports = True
    tag = uuid.uuid4().hex[:8]
    out = f"shop.eos_{tag}"
    server.create_table(out, pa.schema([pa.field("id", pa.int64(), nullable=False)]), buckets=2,
                        properties={"kafka.value.format": "json"})
    kafka = f"'properties.bootstrap.servers' = '{bootstrap(server)}'"
    job = start_sql(f"""
SET 'execution.checkpointing.interval' = '1s';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '30';
SET 'restart-strategy.fixed-delay.delay' = '2s';
CREATE TABLE ids (id BIGINT) WITH (
  'connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
  'fields.id.end' = '4000', 'rows-per-second' = '500');
CREATE TABLE eos (id BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{out}', {kafka}, 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'eos-{tag}',
  'properties.transaction.timeout.ms' = '60000');
INSERT INTO eos SELECT id FROM ids;
""", tmp_path)
    # Mid-job: once some checkpoints committed, and with a transaction open.
    deadline = time.monotonic() + 120
    while server.read_all(out).num_rows < 1000:
        assert job.poll() is None and time.monotonic() < deadline, job_output(job)
        time.sleep(0.2)
    before_kill = server.read_all(out).num_rows
    assert job.poll() is None and before_kill < 4000
    server.kill()
    time.sleep(1)
    server.start()
    assert job.wait(timeout=300) == 0, job_output(job)
    print(f"{before_kill} rows committed when oxbowd was killed")
    ids = server.read_all(out).column("id").to_pylist()
    assert sorted(ids) == list(range(1, 4001))
