"""Lake conformance: what oxbowd tiers is read back by pyiceberg, DuckDB and fastavro exactly.

A newcomer's path: produce with pyarrow.flight, wait until describe_table's lag_rows is 0, open
describe_table's metadata_location with pyiceberg's StaticTable and scan. The scan must hold
exactly the log's rows (read back with DoGet, offsets from app_metadata), in the widened types
Iceberg holds, each (__bucket, __offset) once. DuckDB's iceberg_scan and Spark then read the
same metadata.json and must return the same rows, value for value (tests/oxbowtest/readers.py).
"""

from __future__ import annotations

import datetime
import decimal
import functools
import json
import pathlib
import time

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual, IsNull, LessThanOrEqual
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType,
                             FixedType, FloatType, IntegerType, LongType, StringType,
                             TimestampType, TimestamptzType)

from oxbowtest import type_samples
from oxbowtest.lake import (SYSTEM_COLUMNS, assert_lake_equals_log, assert_same_columns,
                            avro_files_of_current_snapshot, data_files, duckdb_union, field_ids,
                            iceberg_table, lake_rows, lake_type, local_path,
                            metadata_json, wait_describe, wait_lake, wide)
from oxbowtest.readers import check_readers, duckdb_rows, spark_rows

D = decimal.Decimal

ICEBERG_TYPES = {
    pa.bool_(): BooleanType(), pa.int8(): IntegerType(), pa.int16(): IntegerType(),
    pa.int32(): IntegerType(), pa.int64(): LongType(), pa.uint8(): IntegerType(),
    pa.uint16(): IntegerType(), pa.uint32(): LongType(), pa.float32(): FloatType(),
    pa.float64(): DoubleType(), pa.string(): StringType(), pa.binary(): BinaryType(),
    pa.date32(): DateType(),
}


def iceberg_type(t: pa.DataType):
    if pa.types.is_timestamp(t):
        return TimestamptzType() if t.tz else TimestampType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    return ICEBERG_TYPES[t]


def check_schema(metadata_location: str, schema: pa.Schema) -> None:
    """Iceberg types, requiredness and field ids (1..n, then the system columns) are the ones
    the lake promises; pyiceberg's Arrow schema has the widened Arrow types."""
    tbl = iceberg_table(metadata_location)
    ice = tbl.schema()
    names = [f.name for f in ice.fields]
    assert names == schema.names + SYSTEM_COLUMNS
    for i, f in enumerate(schema):
        field = ice.find_field(f.name)
        assert field.field_id == i + 1, f"{f.name}: field id {field.field_id}"
        assert field.field_type == iceberg_type(f.type), f"{f.name}: {field.field_type}"
        assert field.required == (not f.nullable), f"{f.name}: required={field.required}"
    n = len(schema)
    for i, (name, typ) in enumerate(zip(SYSTEM_COLUMNS,
                                        [IntegerType(), LongType(), TimestamptzType()])):
        field = ice.find_field(name)
        assert (field.field_id, field.field_type, field.required) == (n + 1 + i, typ, True)
    arrow = tbl.scan().to_arrow().schema
    for f in schema:
        assert arrow.field(f.name).type == lake_type(f.type), f"{f.name}: {arrow.field(f.name)}"
        assert arrow.field(f.name).nullable == f.nullable


def check_data_files_with_duckdb(metadata_location: str, lake: pa.Table) -> None:
    """DuckDB reads every data file of the current snapshot; the union equals pyiceberg's scan."""
    paths = data_files(metadata_location)
    assert paths, "the current snapshot references no data file"
    for p in paths:
        assert pathlib.Path(p).is_file(), f"data file {p} is missing"
    union = duckdb_union(paths).sort_by([("__bucket", "ascending"), ("__offset", "ascending")])
    assert union.column_names == lake.column_names
    union = pa.table({name: union.column(name).cast(lake.schema.field(name).type)
                      for name in lake.column_names})
    assert_same_columns(union, lake)


def check_avro(metadata_location: str, rows: int) -> None:
    """fastavro reads the manifest list and every manifest of every snapshot; every field of
    their schemas carries its Iceberg field-id; the current snapshot's entries add up."""
    meta = metadata_json(metadata_location)
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])
    for snapshot in meta["snapshots"]:
        with open(local_path(snapshot["manifest-list"]), "rb") as f:
            reader = fastavro.reader(f)
            ids = field_ids(reader.writer_schema)
            manifests = list(reader)
        for required in ["manifest_path", "manifest_length", "partition_spec_id", "content",
                         "sequence_number", "added_snapshot_id", "added_files_count",
                         "added_rows_count"]:
            assert ids.get(required) is not None, f"manifest list field {required}: no field-id"
        assert ids["manifest_path"] == 500 and ids["added_snapshot_id"] == 503
        assert all(v is not None for v in ids.values()), f"fields without field-id: {ids}"
        for m in manifests:
            with open(local_path(m["manifest_path"]), "rb") as f:
                reader = fastavro.reader(f)
                header = reader.metadata
                mids = field_ids(reader.writer_schema)
                list(reader)
            assert header["format-version"] == "2" and header["content"] == "data"
            assert json.loads(header["schema"])["fields"], "manifest header without schema"
            assert int(header["partition-spec-id"]) == spec["spec-id"]
            assert json.loads(header["partition-spec"]) == spec["fields"]
            assert all(v is not None for v in mids.values()), f"fields without field-id: {mids}"
            assert (mids["status"], mids["snapshot_id"], mids["data_file"]) == (0, 1, 2)
            assert (mids["data_file.file_path"], mids["data_file.record_count"]) == (100, 103)
            for pf in spec["fields"]:
                assert mids[f"data_file.partition.{pf['name']}"] == pf["field-id"]
    _, manifests = avro_files_of_current_snapshot(metadata_location)
    live_rows = 0
    for path in manifests:
        with open(path, "rb") as f:
            for entry in fastavro.reader(f):
                if entry["status"] != 2:  # not DELETED
                    live_rows += entry["data_file"]["record_count"]
    assert live_rows == rows, f"manifests count {live_rows} live rows, the log has {rows}"


def check_summary(metadata_location: str, lake_status: dict) -> None:
    meta = metadata_json(metadata_location)
    current = next(s for s in meta["snapshots"]
                   if s["snapshot-id"] == meta["current-snapshot-id"])
    assert json.loads(current["summary"]["oxbow.tiered-offsets"]) == lake_status["tiered_offsets"]
    assert lake_status["snapshots"] == len(meta["snapshots"])
    assert lake_status["data_files"] == int(current["summary"]["total-data-files"])


def test_every_type_over_several_commits(lake_server, table_name, spark_or_none):
    """Every column type, nulls and extremes, 3 buckets, three commits; after each: pyiceberg
    holds exactly the log, DuckDB's iceberg_scan and Spark read the same rows, DuckDB reads
    each data file, fastavro sees the field ids."""
    schema, values = wide()
    lake_server.create_table(table_name, schema, buckets=3)
    produced, first_id = 0, 0
    snapshots = 0
    for round_ in range(3):
        batches = type_samples.make_batches(schema, 4, 7 + round_, values, first_id=first_id)
        first_id += 4 * (7 + round_)
        before_ms = time.time() * 1000
        for b in batches:  # a stream per batch: round-robin spreads them over the buckets
            lake_server.put(table_name, [b])
        after_ms = time.time() * 1000
        produced += sum(b.num_rows for b in batches)
        status = wait_lake(lake_server, table_name)
        location = status["metadata_location"]
        assert status["snapshots"] > snapshots, "a new commit should add a snapshot"
        snapshots = status["snapshots"]
        lake = assert_lake_equals_log(lake_server, table_name, location)
        assert lake.num_rows == produced
        # __timestamp is the append time of this round's rows (ms precision)
        fresh = lake.filter(pc.greater_equal(lake["id"], first_id - 4 * (7 + round_)))
        stamps = fresh["__timestamp"].cast(pa.int64()).to_pylist()
        assert min(stamps) >= int(before_ms - 1) * 1000 and max(stamps) <= (after_ms + 1) * 1000
        check_schema(location, schema)
        check_readers(location, lake, spark_or_none)
        check_data_files_with_duckdb(location, lake)
        check_avro(location, produced)
        check_summary(location, status)


def test_bounds_let_pyiceberg_prune_correctly(lake_server, table_name):
    """Filters on each column's smallest and largest value and IS NULL return exactly the
    matching rows: the bounds and null counts in the manifests are right (pyiceberg skips
    files by them)."""
    schema, values = wide()
    lake_server.create_table(table_name, schema, buckets=1)
    for r in range(3):  # three data files with different value mixes
        lake_server.put(table_name, type_samples.make_batches(schema, 1, 5 + r, values,
                                                              first_id=100 * r))
        wait_lake(lake_server, table_name)
    location = wait_lake(lake_server, table_name)["metadata_location"]
    assert len(data_files(location)) >= 3
    tbl = iceberg_table(location)
    lake = lake_rows(location)
    for f in schema:
        column = lake[f.name]
        if pa.types.is_floating(f.type):
            # finite values: pyiceberg turns a float literal of +-inf into "above/below max"
            column = pc.drop_null(column)
            column = column.filter(pc.is_finite(column))
        else:
            column = pc.drop_null(column)
        if len(column) == 0:
            continue
        lo, hi = pc.min(column), pc.max(column)
        for expr, want in [
            (GreaterThanOrEqual(f.name, _literal(hi)), pc.greater_equal(lake[f.name], hi)),
            (LessThanOrEqual(f.name, _literal(lo)), pc.less_equal(lake[f.name], lo)),
            (EqualTo(f.name, _literal(lo)), pc.equal(lake[f.name], lo)),
            (IsNull(f.name), pc.is_null(lake[f.name])),
        ]:
            got = tbl.scan(row_filter=expr, selected_fields=("__offset",)).to_arrow()
            expected = lake.filter(want.fill_null(False))["__offset"]
            assert sorted(got["__offset"].to_pylist()) == sorted(expected.to_pylist()), (
                f"{expr}: {got.num_rows} rows, expected {len(expected)}")


def _literal(scalar: pa.Scalar):
    """A pyarrow scalar as the Python literal pyiceberg expressions take."""
    if pa.types.is_timestamp(scalar.type):
        return scalar.cast(pa.int64()).as_py()  # micros: pyiceberg's internal form
    if pa.types.is_date32(scalar.type):
        return scalar.cast(pa.int32()).as_py()
    return scalar.as_py()


# --- partitioned tables -----------------------------------------------------------------------

PART_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("ts_ns", pa.timestamp("ns")),
    pa.field("d", pa.date32()),
    pa.field("s", pa.string()),
    pa.field("small", pa.int16()),
    pa.field("dec", pa.decimal128(12, 3)),
    pa.field("big_dec", pa.decimal128(38, 2)),
    pa.field("bin", pa.binary()),
    pa.field("fixed", pa.binary(3)),
])

US_PER_HOUR = 3600 * 10**6


def part_batch(first_id: int, rows: int, nulls: bool = True) -> pa.RecordBatch:
    """Rows over many days/months/hours (before and after 1970), strings of varied length and
    script; with `nulls`, some nulls in every nullable column."""
    ids = list(range(first_id, first_id + rows))

    def null_if(i, k, m, v):
        return None if nulls and i % k == m else v

    ts = [null_if(i, 11, 5, (i - 20) * 37 * US_PER_HOUR + i * 1234567) for i in ids]
    ts_ns = [null_if(i, 13, 6, (i - 20) * 53 * US_PER_HOUR * 1000 - i) for i in ids]
    d = [null_if(i, 9, 4, (i - 20) * 17) for i in ids]
    words = ["", "a", "ab", "abc", "abcd", "héllo wörld", "日本語テキスト", "🚀🚀🚀🚀", "zz"]
    s = [null_if(i, 10, 3, words[i % len(words)] + str(i % 4)) for i in ids]
    small = [null_if(i, 7, 2, (i * 7919) % 65536 - 32768) for i in ids]
    dec = [null_if(i, 8, 1, D(i * 1013 - 20000) / 1000) for i in ids]
    big_dec = [null_if(i, 6, 5, D(10**35 + i * 12345).scaleb(-2) * (1 if i % 3 else -1))
               for i in ids]
    bins = [null_if(i, 12, 7, bytes([i % 256]) * (i % 5)) for i in ids]
    fixed = [null_if(i, 14, 3, bytes([i % 256, 0, 255 - i % 256])) for i in ids]
    return pa.record_batch([
        pa.array(ids, pa.int64()), pa.array(ts, pa.timestamp("us", tz="UTC")),
        pa.array(ts_ns, pa.timestamp("ns")), pa.array(d, pa.date32()), pa.array(s),
        pa.array(small, pa.int16()), pa.array(dec, pa.decimal128(12, 3)),
        pa.array(big_dec, pa.decimal128(38, 2)), pa.array(bins, pa.binary()),
        pa.array(fixed, pa.binary(3))], schema=PART_SCHEMA)


PARTITIONS = [
    "identity(__bucket)",
    "bucket[4](id)",
    "day(ts)",
    "month(ts)",
    "year(d)",
    "hour(ts_ns)",
    "truncate[3](s)",
    "truncate[100](id)",
    "identity(s), identity(d)",
    "bucket[8](s), bucket[3](dec), bucket[5](fixed)",
    "bucket[2](bin), truncate[2](bin), truncate[10](small)",
    "truncate[1000](dec), bucket[7](big_dec)",
    "day(__timestamp), identity(__bucket)",
    "bucket[4](ts), day(d), month(ts_ns)",
]


def check_partitions(metadata_location: str) -> int:
    """Every data file's partition tuple is the spec's transforms applied to each of its rows
    (computed by pyiceberg); returns the number of distinct partitions."""
    tbl = iceberg_table(metadata_location)
    spec, schema = tbl.spec(), tbl.schema()
    tuples = set()
    for task in tbl.scan().plan_files():
        rows = pq.read_table(local_path(task.file.file_path))
        partition = task.file.partition
        got = tuple(partition[i] for i in range(len(spec.fields)))
        tuples.add(got)
        for pos, pf in enumerate(spec.fields):
            source = schema.find_field(pf.source_id)
            column = rows.column(source.name)
            if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
                column = column.cast(pa.int64() if pa.types.is_timestamp(column.type)
                                     else pa.int32())
            fn = pf.transform.transform(source.field_type)
            want = {fn(v) for v in column.to_pylist()}
            have = got[pos]
            if isinstance(have, datetime.date):
                have = (have - datetime.date(1970, 1, 1)).days
            assert want == {have}, (f"{task.file.file_path}: partition field {pf.name} is "
                                    f"{got[pos]!r} but its rows give {want}")
    return len(tuples)


@pytest.mark.parametrize("partition", PARTITIONS)
def test_partitioned(lake_server, table_name, partition, spark_or_none):
    """Rows without nulls; test_partitioned_with_nulls covers nulls and null partitions."""
    check_partitioned(lake_server, table_name, partition, False, spark_or_none)


@pytest.mark.parametrize("partition", ["day(ts)", "truncate[3](s)", "identity(s), identity(d)",
                                       "bucket[3](dec), month(ts_ns)"])
def test_partitioned_with_nulls(lake_server, table_name, partition, spark_or_none):
    """Nulls in every nullable column: null partition values (the file of a null partition has
    an all-null source column)."""
    check_partitioned(lake_server, table_name, partition, True, spark_or_none)


def test_all_null_column_in_a_commit(lake_server, table_name, spark_or_none):
    """Reproduction: a nullable string column that is null in every row of a commit."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string()),
                        pa.field("d", pa.date32())])
    lake_server.create_table(table_name, schema)
    lake_server.put(table_name, [pa.record_batch([pa.array([1, 2]), pa.array([None, None],
                                                                          pa.string()),
                                                  pa.array([None, None], pa.date32())],
                                                 schema=schema)])
    location = wait_lake(lake_server, table_name)["metadata_location"]
    lake = assert_lake_equals_log(lake_server, table_name, location)
    assert lake.num_rows == 2
    check_readers(location, lake, spark_or_none)


def check_partitioned(lake_server, table_name, partition, nulls, spark):
    lake_server.create_table(table_name, PART_SCHEMA, buckets=2,
                             properties={"lake.partition": partition})
    produced = 0
    for r in range(2):  # two commits into partly the same partitions
        lake_server.put(table_name, [part_batch(r * 40, 40, nulls),
                                     part_batch(r * 40 + 1000, 15, nulls)])
        lake_server.put(table_name, [part_batch(r * 40 + 2000, 9, nulls)])
        produced += 64
        status = wait_lake(lake_server, table_name)
    location = status["metadata_location"]
    spec = iceberg_table(location).spec()
    assert [str(f.transform) for f in spec.fields] == [
        p.strip().split("(")[0] for p in partition.split(", ")]
    lake = assert_lake_equals_log(lake_server, table_name, location)
    assert lake.num_rows == produced
    distinct = check_partitions(location)
    assert distinct > 1, "the sample rows should fall into several partitions"
    check_readers(location, lake, spark)
    check_data_files_with_duckdb(location, lake)
    check_avro(location, produced)
    # pruning on the partition source returns exactly the matching rows
    first = iceberg_table(location).spec().fields[0]
    name = iceberg_table(location).schema().find_field(first.source_id).name
    value = lake[name][3]
    if value.is_valid:
        got = iceberg_table(location).scan(row_filter=EqualTo(name, _literal(value))).to_arrow()
        assert got.num_rows == pc.sum(pc.equal(lake[name], value)).as_py()


def test_newcomer_reads_with_only_the_metadata_location(lake_server, table_name):
    """describe_table's metadata_location is null before the first commit and then a
    vN.metadata.json that pyiceberg opens with no catalog; it advances with every commit."""
    lake_server.create_table(table_name, PART_SCHEMA)
    status = lake_server.describe(table_name)["lake"]
    assert status["enabled"] is True and status["metadata_location"] is None
    assert status["tiered_offsets"] == [0] and status["lag_rows"] == 0
    assert status["snapshots"] == 0 and status["data_files"] == 0
    locations = []
    for r in range(3):
        lake_server.put(table_name, [part_batch(r * 10, 10)])
        locations.append(wait_lake(lake_server, table_name)["metadata_location"])
    assert all(local_path(p).name.endswith(".metadata.json") for p in locations)
    assert len(set(locations)) == 3, f"each commit writes new metadata: {locations}"
    for r, location in enumerate(locations):  # older metadata files stay readable snapshots
        assert iceberg_table(location).scan().to_arrow().num_rows == 10 * (r + 1)


def _ids(iceberg_type) -> list[int]:
    """Every field id under an Iceberg schema JSON type (struct fields, list element, map key
    and value)."""
    if not isinstance(iceberg_type, dict):
        return []
    if iceberg_type["type"] == "struct":
        return [i for f in iceberg_type["fields"] for i in [f["id"], *_ids(f["type"])]]
    if iceberg_type["type"] == "list":
        return [iceberg_type["element-id"], *_ids(iceberg_type["element"])]
    return [iceberg_type["key-id"], iceberg_type["value-id"], *_ids(iceberg_type["key"]),
            *_ids(iceberg_type["value"])]


def test_nested_columns(lake_server, table_name, spark_or_none):
    """list, struct and map columns with nulls at every level: the schema gives every nested
    field an id (element-id, key-id, value-id, struct fields) and pyiceberg, DuckDB's
    iceberg_scan and Spark read the log's values."""
    point = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("l", pa.list_(pa.int64())),
                        ("s", point), ("m", pa.map_(pa.string(), pa.float64())),
                        ("ll", pa.list_(pa.list_(pa.int32())))])
    n = 12
    batch = pa.record_batch([
        pa.array(range(n), pa.int64()),
        pa.array([None if i % 5 == 1 else [None if j == 1 else i * j for j in range(i % 4)]
                  for i in range(n)], pa.list_(pa.int64())),
        pa.array([None if i % 4 == 2 else {"a": None if i % 3 == 0 else i,
                                           "b": None if i % 5 == 0 else ["x" * j for j in range(i % 3)]}
                  for i in range(n)], point),
        pa.array([None if i % 6 == 3 else [(f"k{j}", None if j == 2 else i + j / 2) for j in range(i % 4)]
                  for i in range(n)], pa.map_(pa.string(), pa.float64())),
        pa.array([None if i % 7 == 4 else [None if j == 0 and i % 2 else list(range(j)) for j in range(i % 3)]
                  for i in range(n)], pa.list_(pa.list_(pa.int32()))),
    ], schema=schema)
    lake_server.create_table(table_name, schema)
    lake_server.put(table_name, [batch])
    location = wait_lake(lake_server, table_name)["metadata_location"]

    meta = metadata_json(location)
    current = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    fields = {f["name"]: f for f in current["fields"]}
    assert fields["l"]["type"]["type"] == "list" and fields["l"]["type"]["element-required"] is False
    assert fields["m"]["type"]["type"] == "map" and fields["m"]["type"]["key"] == "string"
    assert [f["name"] for f in fields["s"]["type"]["fields"]] == ["a", "b"]
    ids = [i for f in current["fields"] for i in [f["id"], *_ids(f["type"])]]
    assert len(ids) == len(set(ids)) and max(ids) == meta["last-column-id"]

    readers = [lake_rows, duckdb_rows]
    if spark_or_none is not None:
        readers.append(functools.partial(spark_rows, spark_or_none))
    for read in readers:
        got = read(location).sort_by("id")
        for name in schema.names:
            assert got.column(name).to_pylist() == batch.column(name).to_pylist(), (read, name)

def test_nested_children_in_lake_types(lake_server, table_name, spark_or_none):
    """Children the lake holds in a wider type (int8, int16, uint8/16/32 as int/long, timestamps
    in microseconds) and a fixed_size_list as an Iceberg list: the readers see the lake types
    with the log's values, and Oxbow's union read gives back the log's types exactly."""
    inner = pa.struct([("a", pa.int8()), ("u", pa.uint32()),
                       ("t", pa.timestamp("ns")), ("p", pa.list_(pa.uint8(), 3))])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", inner),
                        ("f", pa.list_(pa.int16(), 2)), ("m", pa.map_(pa.uint16(), pa.int8()))])
    n = 9
    rows = [{"id": i,
             "s": None if i % 4 == 3 else {"a": None if i % 3 == 0 else -i, "u": 4_000_000_000 + i,
                                           "t": None if i == 5 else 1_700_000_000_000_000_000 + i * 1000,
                                           "p": None if i % 2 else [i, None, 255]},
             "f": None if i % 5 == 2 else [-32768 + i, None if i % 2 else 32767],
             "m": None if i == 4 else [(65535 - j, None if j == 1 else -128 + j) for j in range(i % 3)]}
            for i in range(n)]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    lake_server.create_table(table_name, schema)
    lake_server.put(table_name, [batch])
    location = wait_lake(lake_server, table_name)["metadata_location"]

    meta = metadata_json(location)
    current = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    fields = {f["name"]: f["type"] for f in current["fields"]}
    assert fields["f"]["type"] == "list" and fields["f"]["element"] == "int"
    assert [f["type"] for f in fields["s"]["fields"]] == [
        "int", "long", "timestamp", {**fields["s"]["fields"][3]["type"], "type": "list"}]
    assert fields["m"]["key"] == "int" and fields["m"]["value"] == "int"

    def lake_values(name):
        """The column as a lake reader gives it: timestamps as datetimes (microseconds), maps
        as pyiceberg/DuckDB/Spark give them (list of pairs or dict)."""
        out = []
        for r in rows:
            v = r[name]
            if name == "s" and v is not None:
                t = v["t"]
                v = {**v, "t": None if t is None else
                     datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=t // 1000)}
            out.append(v)
        return out

    readers = [lake_rows, duckdb_rows]
    if spark_or_none is not None:
        readers.append(functools.partial(spark_rows, spark_or_none))
    for read in readers:
        got = read(location).sort_by("id")
        for name in ("s", "f"):
            assert got.column(name).to_pylist() == lake_values(name), (read, name)
        maps = got.column("m").to_pylist()
        assert [None if m is None else sorted(m.items() if isinstance(m, dict) else m)
                for m in maps] == [None if r["m"] is None else sorted(r["m"]) for r in rows], read

    ticket = {"table": table_name, "union": True}
    reader = lake_server.client.do_get(fl.Ticket(json.dumps(ticket).encode()))
    got = reader.read_all().sort_by("id")
    assert got.schema == schema
    assert got.equals(pa.Table.from_batches([batch])), got.to_pylist()



# --- fresh files (lake.fresh-codec) -----------------------------------------------------------


def parquet_codecs(path: str) -> set[str]:
    """Every column chunk's codec as pyarrow names it (LZ4_RAW is "LZ4")."""
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(g).column(c).compression
            for g in range(meta.num_row_groups) for c in range(meta.num_columns)}


def newest_fresh_metadata(metadata_location: str) -> str:
    """The newest metadata file (the current one or one of its metadata-log) whose current
    snapshot reads fresh files only."""
    entries = metadata_json(metadata_location)["metadata-log"]
    for location in [metadata_location, *(e["metadata-file"] for e in reversed(entries))]:
        files = data_files(location)
        if files and all(f.endswith(".fresh.parquet") for f in files):
            return location
    raise AssertionError(f"no metadata of {metadata_location} reads fresh files only")


@pytest.mark.parametrize("codec,pyarrow_name", [("lz4", "LZ4")])
def test_fresh_codec_files_are_read_then_rewritten_in_the_final_codec(
        make_lake_server, table_name, spark_or_none, codec, pyarrow_name):
    """lake.fresh-codec: rounds write *.fresh.parquet files in that codec, which pyiceberg,
    DuckDB and Spark read value for value; with fewer than --lake-compaction-min-files of them,
    compaction rewrites them in zstd once a maintenance pass saw no new one, and the readers get
    the same rows from the rewritten files."""
    server = make_lake_server("--lake-maintenance-interval-ms", "200")
    schema, values = wide()
    server.create_table(table_name, schema, buckets=2, properties={"lake.fresh-codec": codec})
    server.put(table_name, type_samples.make_batches(schema, 2, 9, values))

    def rewritten(lake):
        location = lake["metadata_location"]
        return (lake["lag_rows"] == 0 and location is not None and
                not any(f.endswith(".fresh.parquet") for f in data_files(location)))

    final = wait_describe(server, table_name, rewritten, "the fresh files' rewrite",
                          timeout_s=15)["metadata_location"]
    for location, want in ((newest_fresh_metadata(final), pyarrow_name), (final, "ZSTD")):
        files = data_files(location)
        assert files and all(parquet_codecs(f) == {want} for f in files), (
            {f: parquet_codecs(f) for f in files})
        lake = assert_lake_equals_log(server, table_name, location)
        assert lake.num_rows == 18
        check_readers(location, lake, spark_or_none)
