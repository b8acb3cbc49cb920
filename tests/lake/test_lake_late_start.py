"""A lake that starts where the log no longer reaches (docs/lake.md, "Seeding" and "Holes"):
turned on after retention dropped changes it never saw, or turned off and on again over such a
gap. A primary-key lake is seeded from a snapshot of the current rows, so pyiceberg, DuckDB and
the union read agree with the table, and deletes made meanwhile stay deleted. A log table's
rows are gone, so its lake says where it starts (start_offsets) instead of showing no lag over
a hole. A changelog read below the log's start is served from the changelog lake table.

Each test failed before the fix (the lake held 10 keys of 200, with lag 0 and no error)."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.lake import wait_lake, wait_settled
from oxbowtest.flight import expect_error, schema_json
from oxbowtest.readers import check_readers
from test_pk_changelog_lake import changelog_location
from oxbowtest.primary_keys import command, do_get, snapshot, write
from test_union_follow_pk_filter import union_rows

RETAIN_LITTLE = ("--segment-bytes", "4096", "--retention-ms", "1",
                 "--kv-checkpoint-interval-ms", "300")
SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def rows(keys, v: int) -> pa.RecordBatch:
    keys = list(keys)
    return pa.record_batch([pa.array(keys, pa.int32()), pa.array([v] * len(keys), pa.int64())],
                           schema=SCHEMA)


def upsert(server, table, keys, v):
    write(server.client, command(table, "upsert"), [rows(keys, v)])


def delete(server, table, keys):
    write(server.client, command(table, "delete"),
          [pa.record_batch([pa.array(list(keys), pa.int32())], names=["k"])])


def earliest(server, table) -> int:
    return server.describe(table)["bucket_offsets"][0]["earliest_offset"]


def churn_until_retained_past(server, table, offset: int, keys=range(10)) -> None:
    """Upserts `keys` again and again until retention has dropped the log below `offset`."""
    deadline = time.monotonic() + 60
    v = 1000
    while earliest(server, table) <= offset:
        assert time.monotonic() < deadline, "retention never passed offset %d" % offset
        v += 1
        upsert(server, table, keys, v)
        time.sleep(0.05)


def set_lake(server, table, enabled: bool, **extra):
    server.action("alter_table", {"table": table, "changes": [{"op": "set_properties",
        "properties": {"lake.enabled": "true" if enabled else "false", **extra}}]})


def current_rows(server, table) -> dict:
    got, _ = snapshot(server, table)
    return {r["k"]: r["v"] for r in got.to_pylist()}


def check_lake(server, table, model: dict) -> dict:
    lake = wait_settled(server, table)
    assert lake["lag_rows"] == 0 and "error" not in lake, lake
    check_readers(lake["metadata_location"], [{"k": k, "v": v} for k, v in sorted(model.items())],
                  None, key=["k"])
    union, _ = union_rows(server, table)
    assert {r["k"]: r["v"] for r in union.to_pylist()} == model
    assert union.num_rows == len(model)
    return lake


def test_a_primary_key_lake_enabled_after_retention_is_seeded(make_lake_server, table_name):
    server = make_lake_server(*RETAIN_LITTLE)
    server.action("create_table", {"table": table_name, "schema": schema_json(SCHEMA),
                                   "primary_key": ["k"], "buckets": 1})
    for first in range(0, 200, 50):
        upsert(server, table_name, range(first, first + 50), 0)
    churn_until_retained_past(server, table_name, 200)
    model = current_rows(server, table_name)
    assert len(model) == 200
    set_lake(server, table_name, True)
    lake = check_lake(server, table_name, model)
    assert lake["start_offsets"] == [0]  # a primary-key lake seeded is whole
    # Rounds go on from the seed: updates and deletes land on the seeded files.
    upsert(server, table_name, range(190, 210), 7)
    delete(server, table_name, range(0, 5))
    model.update({k: 7 for k in range(190, 210)})
    for k in range(5):
        del model[k]
    check_lake(server, table_name, model)
    server.restart()  # the key index is rebuilt from the seeded files
    delete(server, table_name, range(5, 8))
    for k in range(5, 8):
        del model[k]
    check_lake(server, table_name, model)


def test_a_primary_key_lake_off_then_on_over_a_gap_keeps_deletes(make_lake_server, table_name):
    server = make_lake_server(*RETAIN_LITTLE)
    server.action("create_table", {"table": table_name, "schema": schema_json(SCHEMA),
                                   "primary_key": ["k"], "buckets": 1,
                                   "properties": {"lake.enabled": "true"}})
    upsert(server, table_name, range(200), 0)
    check_lake(server, table_name, {k: 0 for k in range(200)})
    set_lake(server, table_name, False)
    delete(server, table_name, range(100, 110))      # gone while the lake is off
    upsert(server, table_name, range(300, 310), 3)   # new while the lake is off
    end = server.describe(table_name)["bucket_offsets"][0]["next_offset"]
    churn_until_retained_past(server, table_name, end)
    set_lake(server, table_name, True)
    model = current_rows(server, table_name)
    assert len(model) == 200 and 100 not in model and 300 in model
    check_lake(server, table_name, model)


def test_a_log_table_lake_enabled_after_retention_says_where_it_starts(make_lake_server,
                                                                        table_name):
    server = make_lake_server("--segment-bytes", "4096", "--retention-ms", "1")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("pad", pa.string())])
    server.create_table(table_name, schema, properties={"lake.enabled": "false"})
    for i in range(40):
        server.put(table_name, [pa.record_batch(
            [pa.array(range(20 * i, 20 * i + 20), pa.int64()), pa.array(["x" * 50] * 20)],
            schema=schema)])
    deadline = time.monotonic() + 60
    while earliest(server, table_name) == 0:
        assert time.monotonic() < deadline, "retention never ran"
        time.sleep(0.1)
    start = earliest(server, table_name)
    set_lake(server, table_name, True)
    lake = wait_lake(server, table_name)
    # Lag 0 is true of what the log still holds; start_offsets says the lake starts past 0.
    assert lake["start_offsets"] == [start] and start > 0, lake
    server.restart()  # recorded in the snapshot summary
    assert wait_lake(server, table_name)["start_offsets"] == [start]
    with expect_error("OUT_OF_RANGE", "in neither the log", f"[0, {start})"):
        server.get({"table": table_name, "from": 0})


def test_changelog_reads_below_the_log_start_come_from_the_changelog_lake(make_lake_server,
                                                                          table_name):
    server = make_lake_server(*RETAIN_LITTLE)
    server.action("create_table", {"table": table_name, "schema": schema_json(SCHEMA),
                                   "primary_key": ["k"], "buckets": 1,
                                   "properties": {"lake.enabled": "true",
                                                  "lake.changelog": "true"}})
    upsert(server, table_name, range(50), 0)
    changelog_location(server, table_name)  # every record in the changelog lake table
    churn_until_retained_past(server, table_name, 60)
    changelog_location(server, table_name)
    start = earliest(server, table_name)
    end = server.describe(table_name)["bucket_offsets"][0]["next_offset"]
    got, metas = do_get(server, {"table": table_name, "bucket": 0, "from": 0})
    assert got.num_rows == end, (got.num_rows, end)
    assert got.column("_change_type").to_pylist()[:50] == ["+I"] * 50
    assert got.column("k").to_pylist()[:50] == list(range(50))
    offsets = [(m["base_offset"], m["next_offset"]) for m in metas if m]
    assert offsets[0][0] == 0 and offsets[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(offsets, offsets[1:])), offsets
    # A window of it, projected, all below the log's start.
    part, _ = do_get(server, {"table": table_name, "bucket": 0, "from": 10, "to": 20,
                              "columns": ["_change_type", "k"]})
    assert part.to_pylist() == [{"_change_type": "+I", "k": k} for k in range(10, 20)]
    assert start > 20
