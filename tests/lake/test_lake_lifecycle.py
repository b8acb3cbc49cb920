"""Lake lifecycle: disabled tables, drop and re-create, untierable tables, freshness, restart,
and maintenance (compaction, manifest merging, snapshot expiry) seen through pyiceberg."""

from __future__ import annotations

import json
import pathlib
import time

import fastavro
import pyarrow as pa
import pytest

from oxbowtest.batches import NAMED_SCHEMA as SCHEMA, named_batch as batch
from oxbowtest import type_samples
from oxbowtest.lake import (assert_lake_equals_log, avro_files_of_current_snapshot, data_files,
                            duckdb_union, iceberg_table, lake_rows, local_path, metadata_json,
                            wait_describe, wait_lake, wait_settled, wide)
from oxbowtest.flight import expect_error
from oxbowtest.readers import check_readers
from test_lake_conformance import check_data_files_with_duckdb, part_batch, PART_SCHEMA

def table_dir(warehouse: pathlib.Path, table: str) -> pathlib.Path:
    ns, name = table.split(".", 1)
    return warehouse / ns / name


def test_disabled_table_has_no_lake(lake_server, warehouse, table_name):
    off = table_name + "_off"
    lake_server.create_table(off, SCHEMA, properties={"lake.enabled": "false"})
    lake_server.create_table(table_name, SCHEMA)  # enabled: proves tiering rounds ran
    lake_server.put(off, [batch(0, 10)])
    lake_server.put(table_name, [batch(0, 10)])
    wait_lake(lake_server, table_name)
    time.sleep(0.3)  # a few more rounds at 100 ms
    assert lake_server.describe(off)["lake"] == {"enabled": False}
    assert not table_dir(warehouse, off).exists()
    assert table_dir(warehouse, table_name).is_dir()


def test_drop_removes_the_lake_and_recreate_starts_empty(lake_server, warehouse, table_name):
    lake_server.create_table(table_name, SCHEMA, buckets=2)
    lake_server.put(table_name, [batch(0, 20)])
    lake_server.put(table_name, [batch(20, 5)])
    old = wait_lake(lake_server, table_name)
    assert table_dir(warehouse, table_name).is_dir()
    lake_server.action("drop_table", {"table": table_name})
    assert not table_dir(warehouse, table_name).exists(), "drop_table left the lake table dir"
    assert not local_path(old["metadata_location"]).exists()

    lake_server.create_table(table_name, SCHEMA, buckets=2)
    fresh = lake_server.describe(table_name)["lake"]
    assert fresh["metadata_location"] is None and fresh["snapshots"] == 0
    assert fresh["tiered_offsets"] == [0, 0] and fresh["lag_rows"] == 0
    lake_server.put(table_name, [batch(1000, 3)])
    status = wait_lake(lake_server, table_name)
    assert status["snapshots"] == 1, "the re-created lake must not inherit the old snapshots"
    lake = assert_lake_equals_log(lake_server, table_name, status["metadata_location"])
    assert lake["id"].to_pylist() == [1000, 1001, 1002]


def test_recreate_after_restart_does_not_inherit_the_old_lake(make_lake_server, warehouse,
                                                              table_name):
    server = make_lake_server()
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, 7)])
    wait_lake(server, table_name)
    server.action("drop_table", {"table": table_name})
    server.create_table(table_name, SCHEMA)
    server.restart()
    server.put(table_name, [batch(50, 2)])
    status = wait_lake(server, table_name)
    lake = assert_lake_equals_log(server, table_name, status["metadata_location"])
    assert lake["id"].to_pylist() == [50, 51]


def test_uint64_table_is_refused_unless_out_of_the_lake(lake_server, warehouse, table_name):
    """create_table refuses it (tests/integration/test_integrity_input.py covers every refusal);
    lake.enabled=false keeps such a table as a log only."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("u", pa.uint64())])
    with expect_error("INVALID_ARGUMENT", "column 'u'", "uint64 has no Iceberg type"):
        lake_server.create_table(table_name, schema)
    lake_server.create_table(table_name, schema, properties={"lake.enabled": "false"})
    lake_server.put(table_name, [pa.record_batch([pa.array([1]), pa.array([2**64 - 1],
                                                                       pa.uint64())],
                                                 schema=schema)])
    assert lake_server.describe(table_name)["lake"] == {"enabled": False}
    assert lake_server.read_all(table_name).column("u").to_pylist() == [2**64 - 1]
    assert not table_dir(warehouse, table_name).exists()


def test_untierable_timestamp_is_refused_and_the_lake_keeps_going(lake_server, table_name):
    """A timestamp[s] beyond the microsecond range cannot enter the lake: DoPut refuses it, naming
    the field and row, and tiering goes on with the rows after it."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("ts", pa.timestamp("s"))])
    lake_server.create_table(table_name, schema)
    good = pa.record_batch([pa.array([1]), pa.array([1_700_000_000], pa.timestamp("s"))],
                           schema=schema)
    lake_server.put(table_name, [good])
    bad = pa.record_batch([pa.array([2]), pa.array([2**62], pa.timestamp("s"))], schema=schema)
    with expect_error("INVALID_ARGUMENT", "field 'ts'", "row 0", str(2**62)):
        lake_server.put(table_name, [bad])
    lake_server.put(table_name, [pa.record_batch([pa.array([3]), pa.array([0], pa.timestamp("s"))],
                                                 schema=schema)])
    status = wait_lake(lake_server, table_name)
    assert lake_rows(status["metadata_location"])["id"].to_pylist() == [1, 3]


def set_properties_behind_the_servers_back(server, table: str, properties: dict) -> None:
    """Edits the stopped server's catalog.json: a table created before create_table checked its
    lake properties, or by hand."""
    path = server.data_dir / "catalog.json"
    catalog = json.loads(path.read_text())
    for t in catalog["tables"]:
        if t["table"] == table:
            t["properties"].update(properties)
    path.write_text(json.dumps(catalog))


@pytest.mark.parametrize("prop, value, needle", [
    ("lake.partition", "day(id)", "does not apply to long"),
    ("lake.freshness", "bogus", "lake.freshness"),
])
def test_table_the_lake_cannot_hold_reports_error_and_lag(make_lake_server, table_name, prop,
                                                          value, needle):
    """create_table refuses such a table now, but one from before that check still says why its
    lake is stuck and how far the log ran ahead."""
    server = make_lake_server()
    server.create_table(table_name, SCHEMA)
    server.stop()
    set_properties_behind_the_servers_back(server, table_name, {prop: value})
    server.start()
    server.put(table_name, [batch(0, 3)])
    status = wait_describe(server, table_name, lambda lake: lake["lag_rows"] == 3, "lag of 3 rows")
    assert needle in status.get("error", ""), status
    assert status["metadata_location"] is None


def test_freshness_property_overrides_the_server_default(lake_server, table_name):
    """lake.freshness 1s on a server whose default is 100 ms: rounds start every freshness/4, so
    right after a round new rows wait about 250 ms (25 ms at the default); lag_ms grows
    meanwhile."""
    lake_server.create_table(table_name, SCHEMA, properties={"lake.freshness": "1s"})
    lake_server.put(table_name, [batch(0, 1)])
    wait_lake(lake_server, table_name, timeout_s=5)  # returns within 50 ms of a round
    lake_server.put(table_name, [batch(1, 1)])
    put_at = time.monotonic()
    time.sleep(0.08)
    lagging = lake_server.describe(table_name)["lake"]
    if time.monotonic() - put_at < 0.15:  # the check is meaningful only well inside 200 ms
        assert lagging["lag_rows"] == 1, lagging
        assert lagging["lag_ms"] > 0, lagging
    status = wait_lake(lake_server, table_name, timeout_s=5)
    assert time.monotonic() - put_at > 0.15, "tiered far sooner than lake.freshness allows"
    assert status["lag_ms"] == 0


def test_server_default_freshness_is_fast(make_lake_server, table_name):
    """--lake-freshness-ms 100: rows reach the lake well within a second."""
    server = make_lake_server(freshness_ms=100)
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, 1)])
    wait_lake(server, table_name)
    started = time.monotonic()
    server.put(table_name, [batch(1, 100)])
    wait_lake(server, table_name, timeout_s=5)
    assert time.monotonic() - started < 1.0


def test_restart_keeps_every_row_exactly_once(make_lake_server, table_name):
    """Write, SIGTERM, restart, write more (twice; once with rows not yet tiered at the stop):
    the lake holds every row once and keeps its snapshots."""
    server = make_lake_server()
    server.create_table(table_name, PART_SCHEMA, buckets=3,
                        properties={"lake.partition": "bucket[4](id)"})
    server.put(table_name, [part_batch(0, 30, nulls=False)])
    server.put(table_name, [part_batch(30, 30, nulls=False)])
    before = wait_lake(server, table_name)
    server.restart()
    after = server.describe(table_name)["lake"]
    assert after["metadata_location"] == before["metadata_location"]
    assert after["tiered_offsets"] == before["tiered_offsets"] and after["lag_rows"] == 0
    server.put(table_name, [part_batch(60, 25, nulls=False)])
    server.restart()  # right after the put: these rows are tiered after the restart
    server.put(table_name, [part_batch(85, 5, nulls=False)])
    status = wait_lake(server, table_name)
    assert status["snapshots"] > before["snapshots"]
    lake = assert_lake_equals_log(server, table_name, status["metadata_location"])
    assert sorted(lake["id"].to_pylist()) == list(range(90))
    check_data_files_with_duckdb(status["metadata_location"], lake)


# --- maintenance ------------------------------------------------------------------------------

MAINTENANCE_FLAGS = ("--lake-compaction-min-files", "4", "--lake-maintenance-interval-ms", "200",
                     "--lake-max-manifests", "3", "--lake-retain-snapshots", "3",
                     "--lake-snapshot-max-age-ms", "1")


def snapshots_of(metadata_location: str) -> list[dict]:
    return metadata_json(metadata_location)["snapshots"]


def referenced_files(metadata_location: str) -> set[str]:
    """Every data file any snapshot still in the metadata references (fastavro)."""
    out = set()
    for snapshot in snapshots_of(metadata_location):
        with open(local_path(snapshot["manifest-list"]), "rb") as f:
            manifests = [m["manifest_path"] for m in fastavro.reader(f)]
        for m in manifests:
            with open(local_path(m), "rb") as f:
                for entry in fastavro.reader(f):
                    if entry["status"] != 2:
                        out.add(str(local_path(entry["data_file"]["file_path"])))
    return out


def test_compaction_merge_and_expiry_keep_the_table_exact(make_lake_server, warehouse,
                                                          table_name, spark_or_none):
    """Many small commits of every type: compaction replaces them (a "replace" snapshot), the
    manifest list stays short, old snapshots expire, and after each the scan still equals the
    log; DuckDB (iceberg_scan and each compacted file) and Spark read the same rows; no data
    file is leaked or missing."""
    server = make_lake_server(*MAINTENANCE_FLAGS)
    schema, values = wide()
    server.create_table(table_name, schema, buckets=1)
    first = 0
    for r in range(10):
        server.put(table_name, type_samples.make_batches(schema, 1, 3 + r % 4, values,
                                                         first_id=first))
        first += 3 + r % 4
        wait_lake(server, table_name)
    operations = {}  # compaction snapshots seen while waiting (expiry may drop them later)

    def compacted_and_expired(lake):
        for s in snapshots_of(lake["metadata_location"]):
            if s["summary"].get("oxbow.compacted-files"):
                operations[s["snapshot-id"]] = s["summary"]["operation"]
        return lake["data_files"] < 10 and lake["snapshots"] <= 3

    status = wait_settled(server, table_name, compacted_and_expired, "compaction and expiry",
                          timeout_s=15)
    location = status["metadata_location"]
    assert set(operations.values()) <= {"replace"}, operations
    assert status["data_files"] < 10, status
    lake = assert_lake_equals_log(server, table_name, location)
    assert lake.num_rows == first
    check_readers(location, lake, spark_or_none)
    check_data_files_with_duckdb(location, lake)
    _, manifests = avro_files_of_current_snapshot(location)
    assert len(manifests) <= 3, f"{len(manifests)} manifests, --lake-max-manifests 3"
    server.stop()
    on_disk = {str(p) for p in table_dir(warehouse, table_name).glob("data/**/*.parquet")}
    referenced = referenced_files(location)
    assert referenced <= on_disk, f"missing data files: {referenced - on_disk}"
    assert on_disk <= referenced, f"leaked data files: {on_disk - referenced}"


def test_compaction_per_partition(make_lake_server, table_name, spark_or_none):
    server = make_lake_server(*MAINTENANCE_FLAGS)
    server.create_table(table_name, PART_SCHEMA, buckets=2,
                        properties={"lake.partition": "identity(__bucket)"})
    for r in range(12):  # round-robin: 6 commits per bucket
        server.put(table_name, [part_batch(r * 10, 10, nulls=False)])
        wait_lake(server, table_name)
    # 6 commits per partition, compacted once each when 4 small files are there: 1 + 2 files
    location = wait_settled(server, table_name, lambda lake: lake["data_files"] <= 6,
                            "compaction of both partitions", timeout_s=15)["metadata_location"]
    tasks = iceberg_table(location).scan().plan_files()
    for t in tasks:
        rows = duckdb_union([str(local_path(t.file.file_path))])
        assert set(rows["__bucket"].to_pylist()) == {t.file.partition[0]}
    lake = assert_lake_equals_log(server, table_name, location)
    assert sorted(lake["id"].to_pylist()) == list(range(120))
    check_readers(location, lake, spark_or_none)


def test_snapshot_summaries_carry_tiered_offsets(lake_server, table_name):
    lake_server.create_table(table_name, SCHEMA, buckets=2)
    for r in range(3):
        lake_server.put(table_name, [batch(r * 5, 5)])
        wait_lake(lake_server, table_name)
    location = wait_lake(lake_server, table_name)["metadata_location"]
    previous = [0, 0]
    for s in snapshots_of(location):
        offsets = json.loads(s["summary"]["oxbow.tiered-offsets"])
        assert len(offsets) == 2 and all(a >= b for a, b in zip(offsets, previous))
        previous = offsets
    assert sum(previous) == 15
    assert len(data_files(location)) == 3
