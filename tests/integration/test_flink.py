"""Flink SQL on Oxbow through Flink's own Kafka connectors (docs/flink.md): a `kafka` source on a
log table written through Flight and Kafka, a `kafka` sink into another log table, and an
`upsert-kafka` sink into a primary-key table whose snapshot, lookups and Iceberg copy then equal
what Flink computed. Flink 2.2 runs in one JVM (tests/oxbowtest/flink.py), once per test."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from oxbowtest.flink import run_sql
from oxbowtest.kafka import bootstrap, produce
from oxbowtest.lake import lake_rows, wait_lake
from oxbowtest.primary_keys import delete, do_get, snapshot

ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("customer", pa.string()),
                    ("amount", pa.int64())])
TOTALS = pa.schema([pa.field("customer", pa.string(), nullable=False),
                    ("orders", pa.int64()), ("total", pa.int64())])


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
