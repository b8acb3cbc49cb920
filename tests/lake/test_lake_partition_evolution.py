"""Partition evolution of lake tables (docs/lake.md, "Partition evolution"): alter_table changes
lake.partition of a table in the lake (a transform changed, a field added, kept or removed, the
table unpartitioned and partitioned again) between writes and a restart; the Iceberg table gets
a new partition spec per change (field ids reused for the same field, new ones above
last-partition-id), data files written after it carry its tuples, in manifests of that spec,
and pyiceberg, DuckDB (and, once, Spark) read every file of every spec exactly as a Python
model says; pyiceberg's partition pruning on old and new partition columns stays exact; so do
Oxbow's union read, DoGet served from the lake's files, and compaction, which rewrites files
of an earlier spec into the current one."""

from __future__ import annotations

import datetime
import json
import time

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.table import StaticTable
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import IntegerType

from oxbowtest.lake import local_path, metadata_json, wait_lake
from oxbowtest.flight import expect_error
from oxbowtest.readers import check_readers
from test_lake_schema_evolution import SMALL_SEGMENTS, get

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.int32()),
                    pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("s", pa.string())])
BASE = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
MICROS_PER_HOUR = 3600 * 1_000_000


def row(i: int) -> dict:
    """Row `i`: rows 50 minutes apart, so a few days and many hours; k null now and then."""
    return {"id": i, "k": None if i % 11 == 4 else i % 7,
            "ts": BASE + datetime.timedelta(minutes=50 * i), "s": f"s{i}"}


def put(server, table: str, ids) -> list[dict]:
    rows = [row(i) for i in ids]
    server.put(table, [pa.RecordBatch.from_pylist(rows, schema=SCHEMA)])
    return rows


def set_partition(server, table: str, partition: str | None) -> dict:
    return server.action("alter_table", {"table": table, "changes": [
        {"op": "set_properties", "properties": {"lake.partition": partition}}]})


def micros(ts: datetime.datetime) -> int:
    return (ts - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // \
        datetime.timedelta(microseconds=1)


def partition_value(field: dict, source_value):
    """Our Python form of a partition field's value for a source value (None stays None)."""
    if source_value is None:
        return None
    transform = field["transform"]
    if transform == "identity":
        return source_value
    if transform == "day":
        return micros(source_value) // (24 * MICROS_PER_HOUR)
    if transform == "hour":
        return micros(source_value) // MICROS_PER_HOUR
    if transform.startswith("bucket["):
        return BucketTransform(int(transform[7:-1])).transform(IntegerType())(source_value)
    raise AssertionError(f"no model of transform {transform}")


def check_manifests(location: str) -> dict[int, int]:
    """Every manifest of the current snapshot holds files of one spec: its list entry's
    partition_spec_id, its Avro metadata partition-spec-id and partition-spec (that spec's
    fields) agree with the table metadata, and each data file's partition record has that
    spec's fields, whose values are the transforms (computed here, pyiceberg's bucket hash) of
    every row the file holds. Returns the number of live data files per spec id."""
    md = metadata_json(location)
    specs = {s["spec-id"]: s["fields"] for s in md["partition-specs"]}
    names = {f["id"]: f["name"] for s in md["schemas"] for f in s["fields"]}
    snapshot = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    files: dict[int, int] = {}
    with open(local_path(snapshot["manifest-list"]), "rb") as f:
        manifests = list(fastavro.reader(f))
    for m in manifests:
        spec_id = m["partition_spec_id"]
        fields = specs[spec_id]
        with open(local_path(m["manifest_path"]), "rb") as f:
            reader = fastavro.reader(f)
            assert reader.metadata["partition-spec-id"] == str(spec_id)
            assert json.loads(reader.metadata["partition-spec"]) == fields
            for entry in reader:
                if entry["status"] == 2 or entry["data_file"]["content"] != 0:
                    continue
                files[spec_id] = files.get(spec_id, 0) + 1
                partition = entry["data_file"]["partition"]
                assert list(partition) == [f["name"] for f in fields], (partition, fields)
                rows = pq.read_table(local_path(entry["data_file"]["file_path"])).to_pylist()
                assert rows
                for r in rows:
                    for field in fields:
                        got = partition[field["name"]]
                        if isinstance(got, datetime.date):  # fastavro's form of a day
                            got = (got - datetime.date(1970, 1, 1)).days
                        want = partition_value(field, r[names[field["source-id"]]])
                        assert got == want, (f"{entry['data_file']['file_path']}: "
                                             f"{field['name']} {got} != {want} for row {r}")
    return files


def spec_fields(md: dict, spec_id: int) -> list[tuple]:
    spec = next(s for s in md["partition-specs"] if s["spec-id"] == spec_id)
    return [(f["name"], f["transform"], f["field-id"]) for f in spec["fields"]]


def check_pruning(location: str, model: list[dict]) -> None:
    """pyiceberg scans with a filter on a column of an earlier spec (ts) and of a later one (k)
    return exactly the model's matching rows (files are pruned by their own spec's tuples)."""
    table = StaticTable.from_metadata(location)
    start, end = BASE + datetime.timedelta(hours=30), BASE + datetime.timedelta(hours=31)
    filters = {
        "ts in one hour": (And(GreaterThanOrEqual("ts", start.isoformat()),
                               LessThan("ts", end.isoformat())),
                           lambda r: start <= r["ts"] < end),
        "k = 3": (EqualTo("k", 3), lambda r: r["k"] == 3),
    }
    for what, (expression, predicate) in filters.items():
        got = sorted(table.scan(row_filter=expression, selected_fields=("id",))
                     .to_arrow()["id"].to_pylist())
        want = sorted(r["id"] for r in model if predicate(r))
        assert want, f"{what}: the filter matches nothing: the check tests nothing"
        assert got == want, f"{what}: pyiceberg returned {got}, expected {want}"


def check_oxbow_reads(server, table: str, model: list[dict]) -> None:
    want = pa.Table.from_pylist(model, schema=SCHEMA).sort_by("id").to_pylist()
    got = get(server, {"table": table, "bucket": 0, "from": 0})
    assert got.sort_by("id").to_pylist() == want
    got = get(server, {"table": table, "union": True})
    assert got.sort_by("id").to_pylist() == want


def test_partition_evolution_read_by_every_reader(make_lake_server, table_name, spark_or_none):
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, properties={"lake.partition": "day(ts)"})
    model: list[dict] = []
    # Each step: lake.partition, then the spec the lake must make the default (name, transform,
    # field id per field; None: none yet, the spec id is checked below).
    steps = [
        (None, "day(ts)", [("ts_day", "day", 1000)]),
        # A transform changes and a field is added.
        ("hour(ts), bucket[4](k)", None, [("ts_hour", "hour", 1001),
                                          ("k_bucket", "bucket[4]", 1002)]),
        # A field kept keeps its id.
        ("bucket[4](k)", None, [("k_bucket", "bucket[4]", 1002)]),
        ("", None, []),  # unpartitioned
        # The bucket count changes: a new field, and a name of its own.
        ("bucket[8](k)", None, [("k_bucket_8", "bucket[8]", 1003)]),
        # Back to the first spec: spec 0 again, no new spec or field id.
        ("day(ts)", 0, [("ts_day", "day", 1000)]),
    ]
    spec_ids = []
    for n, (partition, _, fields) in enumerate(steps):
        if partition is not None:
            described = set_partition(server, table_name, partition)
            assert described["properties"].get("lake.partition", "") == partition
        model += put(server, table_name, range(20 * n, 20 * n + 20))
        location = wait_lake(server, table_name)["metadata_location"]
        md = metadata_json(location)
        assert spec_fields(md, md["default-spec-id"]) == fields, (n, md["partition-specs"])
        spec_ids.append(md["default-spec-id"])
        if n == 1:
            server.restart()  # the specs and the default survive it
            assert metadata_json(wait_lake(server, table_name)["metadata_location"])[
                "default-spec-id"] == spec_ids[-1]
    assert spec_ids == [0, 1, 2, 3, 4, 0]
    assert md["last-partition-id"] == 1003
    assert len(md["partition-specs"]) == 5
    files = check_manifests(location)
    assert set(files) == {0, 1, 2, 3, 4}, f"data files of every spec: {files}"
    expected = pa.Table.from_pylist(model, schema=SCHEMA)
    check_readers(location, expected, spark_or_none, key=["id"])
    check_pruning(location, model)
    # Retention deletes tiered segments: DoGet reads the oldest rows from the lake's files.
    for first in range(120, 320, 20):
        if server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] >= 40:
            break
        model += put(server, table_name, range(first, first + 20))
        wait_lake(server, table_name)
    assert server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] >= 40, (
        "retention deleted no rows of the first specs: DoGet from the lake was not tested")
    check_oxbow_reads(server, table_name, model)


def test_compaction_rewrites_earlier_specs_into_the_current_one(make_lake_server, table_name):
    """Small files of spec 0 (day(ts)) left by one server; a restart with eager compaction
    rewrites them into the current spec (bucket[2](k)): their rows split by k, the tuples right,
    every reader exact."""
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, properties={"lake.partition": "day(ts)"})
    model: list[dict] = []
    for first in range(0, 20, 4):  # 5 rounds: 5 small files of the day they all fall in
        model += put(server, table_name, range(first, first + 4))
        wait_lake(server, table_name)
    set_partition(server, table_name, "bucket[2](k)")
    model += put(server, table_name, range(20, 30))
    location = wait_lake(server, table_name)["metadata_location"]
    before = check_manifests(location)
    assert before[0] >= 5 and before[1] >= 1, before
    server.stop()
    server = make_lake_server("--lake-compaction-min-files", "4", "--lake-maintenance-interval-ms",
                              "100", data_dir=server.data_dir)
    deadline = time.monotonic() + 20
    while True:
        location = wait_lake(server, table_name)["metadata_location"]
        files = check_manifests(location)
        if files.get(0, 0) < before[0] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert files.get(0, 0) < before[0], f"no file of spec 0 was compacted: {files}"
    md = metadata_json(location)
    assert any(s["summary"]["operation"] == "replace" for s in md["snapshots"])
    expected = pa.Table.from_pylist(model, schema=SCHEMA)
    check_readers(location, expected, None, key=["id"])
    check_pruning_k(location, model)
    check_oxbow_reads(server, table_name, model)


def check_pruning_k(location: str, model: list[dict]) -> None:
    got = sorted(StaticTable.from_metadata(location).scan(row_filter=EqualTo("k", 3))
                 .to_arrow()["id"].to_pylist())
    assert got == sorted(r["id"] for r in model if r["k"] == 3)


def test_primary_key_lake_and_changelog_evolve(lake_server, table_name):
    """A primary-key table and its changelog lake table follow lake.partition changes; updates
    of keys whose rows are in files of an earlier spec delete them with position delete files of
    that spec and tuple (Iceberg matches deletes to data files by both), so every reader sees
    each key once, with its last value."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.int32()),
                        pa.field("v", pa.string())])
    lake_server.create_table(table_name, schema, primary_key=["id"], properties={
        "lake.enabled": "true", "lake.changelog": "true", "lake.partition": "bucket[2](id)"})
    current: dict[int, dict] = {}
    changes = 0

    def upsert(ids, tag):
        nonlocal changes
        rows = [{"id": i, "g": i % 3, "v": f"{tag}{i}"} for i in ids]
        lake_server.put(table_name, [pa.RecordBatch.from_pylist(rows, schema=schema)])
        for r in rows:
            changes += 2 if r["id"] in current else 1  # -U/+U or +I
            current[r["id"]] = r

    upsert(range(20), "a")
    wait_lake(lake_server, table_name)
    for partition, tag, ids in [("identity(g)", "b", range(0, 30, 2)), ("", "c", range(1, 30, 3)),
                                ("bucket[2](id)", "d", range(0, 35, 5))]:
        set_partition(lake_server, table_name, partition)
        upsert(ids, tag)
        lake = wait_lake(lake_server, table_name)
        check_readers(lake["metadata_location"],
                      pa.Table.from_pylist(list(current.values()), schema=schema), None,
                      key=["id"])
    md = metadata_json(lake["metadata_location"])
    assert [spec_fields(md, s["spec-id"]) for s in md["partition-specs"]] == [
        [("id_bucket", "bucket[2]", 1000)], [("g", "identity", 1001)], []]
    assert md["default-spec-id"] == 0
    # Position deletes of every spec: each delete manifest's spec is its files' spec.
    specs_with_deletes = set()
    snapshot = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    with open(local_path(snapshot["manifest-list"]), "rb") as f:
        for m in fastavro.reader(f):
            if m["content"] == 1 and m["added_files_count"] + m["existing_files_count"]:
                specs_with_deletes.add(m["partition_spec_id"])
    assert specs_with_deletes >= {0, 1}, specs_with_deletes
    changelog = lake["changelog"]["metadata_location"]
    cmd = metadata_json(changelog)
    assert [spec_fields(cmd, s["spec-id"]) for s in cmd["partition-specs"]] == [
        [("id_bucket", "bucket[2]", 1000)], [("g", "identity", 1001)], []]
    records = StaticTable.from_metadata(changelog).scan().to_arrow()
    assert records.num_rows == changes
    got = get(lake_server, {"table": table_name, "union": True}).sort_by("id").to_pylist()
    assert got == sorted(current.values(), key=lambda r: r["id"])


def test_refused_partitions_and_drops(lake_server, table_name):
    schema = pa.schema([pa.field("k", pa.int32()), pa.field("d", pa.date32()),
                        pa.field("s", pa.string()), pa.field("f", pa.float64())])
    lake_server.create_table(table_name, schema, properties={"lake.partition": "identity(k)"})
    lake_server.put(table_name, [pa.RecordBatch.from_pylist(
        [{"k": 1, "d": datetime.date(2024, 1, 2), "s": "x", "f": 0.5}], schema=schema)])
    wait_lake(lake_server, table_name)
    for partition, needles in [
        ("day(nope)", ["lake.partition 'day(nope)'", "'nope' is not in the schema"]),
        ("hour(d)", ["lake.partition 'hour(d)'", "hour", "date"]),
        ("bucket[4](f)", ["lake.partition 'bucket[4](f)'", "bucket", "double"]),
        ("bogus", ["lake.partition 'bogus'", "must be transform(column)"]),
    ]:
        with expect_error("INVALID_ARGUMENT", *needles):
            set_partition(lake_server, table_name, partition)
    set_partition(lake_server, table_name, "truncate[2](s)")
    lake_server.put(table_name, [pa.RecordBatch.from_pylist(
        [{"k": 2, "d": None, "s": "yz", "f": None}], schema=schema)])
    md = metadata_json(wait_lake(lake_server, table_name)["metadata_location"])
    assert md["default-spec-id"] == 1
    # k is the source of spec 0 only, which files still use: it cannot be dropped.
    with expect_error("INVALID_ARGUMENT", "column 'k' cannot be dropped",
                      "partition field 'k' of partition spec 0"):
        lake_server.action("alter_table", {"table": table_name, "changes": [
            {"op": "drop_column", "name": "k"}]})
    lake_server.action("alter_table", {"table": table_name, "changes": [
        {"op": "drop_column", "name": "d"}]})
    assert "d" not in [f["name"] for f in lake_server.describe(table_name)["schema"]["fields"]]
