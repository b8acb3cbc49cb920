"""Iceberg conformance: our manifests, manifest lists and metadata JSON against pyiceberg and fastavro.

pyarrow writes Parquet data files (field ids in `PARQUET:field_id`) into a temporary warehouse;
`iceberg_testtool` (a test-only driver over oxbow::iceberg) creates the table and commits the files
with metrics computed here; pyiceberg (the reference reader) must then scan exactly those rows with the
expected Iceberg types, prune by partition and column bounds, and fastavro must read our Avro files and
see Iceberg's field ids.

The driver is $OXBOW_ICEBERG_TESTTOOL, else $OXBOW_BUILD_DIR/src/oxbow/iceberg/iceberg_testtool
(default build dir: <repo>/build/release).
"""

import datetime
import decimal
import json
import os
import pathlib
import struct
import subprocess

import duckdb
import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.table import StaticTable
from pyiceberg.transforms import BucketTransform
from pyiceberg import types as it

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
D = decimal.Decimal
UTC = datetime.timezone.utc


def _tool_path() -> pathlib.Path:
    if "OXBOW_ICEBERG_TESTTOOL" in os.environ:
        return pathlib.Path(os.environ["OXBOW_ICEBERG_TESTTOOL"])
    build = pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))
    return build / "src" / "oxbow" / "iceberg" / "iceberg_testtool"


@pytest.fixture(scope="session")
def tool():
    path = _tool_path()
    if not path.exists():
        pytest.fail(f"{path} not built (cmake --build <dir> --target iceberg_testtool)")

    def run(*args, ok=True):
        proc = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=60)
        assert proc.returncode >= 0, f"iceberg_testtool killed by signal {-proc.returncode}"
        if ok:
            assert proc.returncode == 0, f"iceberg_testtool {args[0]} failed: {proc.stderr}"
            return json.loads(proc.stdout)
        assert proc.returncode != 0, f"iceberg_testtool {args[0]} unexpectedly succeeded"
        return proc.stderr

    return run


# name -> (arrow type as oxbow parses it, pyarrow type, Iceberg type, values). Values include None
# and extremes. Timestamps are microseconds: the tiering converts other units before writing Parquet.
COLUMNS = {
    "b": ("bool", pa.bool_(), it.BooleanType(), [True, False, None, True]),
    "i8": ("int8", pa.int8(), it.IntegerType(), [-128, 127, None, 0]),
    "i16": ("int16", pa.int16(), it.IntegerType(), [-32768, 32767, None, 1]),
    "i32": ("int32", pa.int32(), it.IntegerType(), [-(2**31), 2**31 - 1, None, 7]),
    "i64": ("int64", pa.int64(), it.LongType(), [-(2**63), 2**63 - 1, None, 8]),
    "u8": ("uint8", pa.uint8(), it.IntegerType(), [0, 255, None, 9]),
    "u16": ("uint16", pa.uint16(), it.IntegerType(), [0, 65535, None, 10]),
    "u32": ("uint32", pa.uint32(), it.LongType(), [0, 2**32 - 1, None, 11]),
    "f32": ("float", pa.float32(), it.FloatType(), [-1.5, 3.25, None, float("nan")]),
    "f64": ("double", pa.float64(), it.DoubleType(), [-1e300, 1e300, None, 0.5]),
    "s": ("string", pa.string(), it.StringType(), ["", "héllo", None, "zz"]),
    "bin": ("binary", pa.binary(), it.BinaryType(), [b"", b"\x00\xff", None, b"abc"]),
    "d": ("date32[day]", pa.date32(), it.DateType(),
          [datetime.date(1900, 1, 1), datetime.date(2262, 4, 11), None, datetime.date(1970, 1, 1)]),
    "ts": ("timestamp[us]", pa.timestamp("us"), it.TimestampType(),
           [datetime.datetime(1960, 1, 1, 0, 0, 0, 1), datetime.datetime(2038, 1, 19, 3, 14, 8), None,
            datetime.datetime(2024, 2, 29, 12)]),
    "tstz": ("timestamp[us, tz=UTC]", pa.timestamp("us", tz="UTC"), it.TimestamptzType(),
             [datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
              datetime.datetime(2024, 1, 1, tzinfo=UTC), None, datetime.datetime(2000, 6, 1, tzinfo=UTC)]),
    "dec": ("decimal128(38, 10)", pa.decimal128(38, 10), it.DecimalType(38, 10),
            [D("-9999999999999999999999999999.9999999999"), D("12.5"), None, D("0")]),
    "dec9": ("decimal128(9, 2)", pa.decimal128(9, 2), it.DecimalType(9, 2), [D("-1.01"), D("14.20"), None, D("3")]),
    "fx": ("fixed_size_binary[4]", pa.binary(4), it.FixedType(4), [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", None, b"abcd"]),
}


def _arrow_schema(columns, required=()):
    return pa.schema([
        pa.field(name, COLUMNS[name][1], nullable=name not in required,
                 metadata={"PARQUET:field_id": str(i + 1)})
        for i, name in enumerate(columns)
    ])


def _tool_schema(columns, required=()):
    return [{"name": n, "type": COLUMNS[n][0], "nullable": n not in required, "field_id": i + 1}
            for i, n in enumerate(columns)]


def _serialize(ice_type, value) -> bytes:
    """Iceberg single-value serialization (spec Appendix D) of a Python value."""
    if isinstance(ice_type, it.BooleanType):
        return b"\x01" if value else b"\x00"
    if isinstance(ice_type, it.IntegerType):
        return struct.pack("<i", value)
    if isinstance(ice_type, it.LongType):
        return struct.pack("<q", value)
    if isinstance(ice_type, it.FloatType):
        return struct.pack("<f", value)
    if isinstance(ice_type, it.DoubleType):
        return struct.pack("<d", value)
    if isinstance(ice_type, it.DateType):
        return struct.pack("<i", (value - datetime.date(1970, 1, 1)).days)
    if isinstance(ice_type, (it.TimestampType, it.TimestamptzType)):
        return struct.pack("<q", _micros(value))
    if isinstance(ice_type, it.StringType):
        return value.encode()
    if isinstance(ice_type, (it.BinaryType, it.FixedType)):
        return bytes(value)
    if isinstance(ice_type, it.DecimalType):
        unscaled = int(value.scaleb(ice_type.scale))
        return unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
    raise AssertionError(ice_type)


def _micros(value) -> int:
    epoch = datetime.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    delta = value - epoch
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _json_value(ice_type, value):
    """A partition source value as iceberg_testtool takes it."""
    if value is not None and isinstance(ice_type, (it.BinaryType, it.FixedType)):
        return bytes(value).hex()
    if value is not None and isinstance(ice_type, it.DecimalType):
        return str(int(value.scaleb(ice_type.scale)))  # a string: unscaled values exceed 64 bits
    return _json_value_for_pyiceberg(ice_type, value)


def _write_file(path: pathlib.Path, table: pa.Table, partition_source=None) -> dict:
    """Writes Parquet with pyarrow and returns the data-file JSON, with metrics, for the tool."""
    pq.write_table(table, path)
    meta = pq.ParquetFile(path).metadata
    sizes, values, nulls, nans, lower, upper = {}, {}, {}, {}, {}, {}
    for i, field in enumerate(table.schema):
        fid = int(field.metadata[b"PARQUET:field_id"])
        ice_type = COLUMNS[field.name][2]
        column = table.column(i)
        sizes[fid] = sum(meta.row_group(g).column(i).total_compressed_size for g in range(meta.num_row_groups))
        values[fid] = len(column)
        nulls[fid] = column.null_count
        non_null = column.drop_null()
        if isinstance(ice_type, (it.FloatType, it.DoubleType)):
            is_nan = pc.is_nan(non_null)
            nans[fid] = pc.sum(is_nan).as_py() or 0
            non_null = non_null.filter(pc.invert(is_nan))
        if len(non_null) == 0:
            continue
        items = sorted(non_null.to_pylist(), key=lambda v: v.encode() if isinstance(v, str) else v)
        lower[fid] = _serialize(ice_type, items[0]).hex()
        upper[fid] = _serialize(ice_type, items[-1]).hex()
    return {
        "path": str(path), "record_count": table.num_rows, "file_size": path.stat().st_size,
        "partition_source": partition_source or {}, "column_sizes": sizes, "value_counts": values,
        "null_value_counts": nulls, "nan_value_counts": nans, "lower_bounds": lower, "upper_bounds": upper,
    }


def _table(columns, rows, required=()):
    schema = _arrow_schema(columns, required)
    return pa.table({n: pa.array([r[n] for r in rows], schema.field(n).type) for n in columns}, schema=schema)


def _rows(columns, count=4):
    return [{n: COLUMNS[n][3][i % len(COLUMNS[n][3])] for n in columns} for i in range(count)]


def _same_rows(actual: pa.Table, expected: pa.Table, key: str):
    def norm(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        return v
    a = sorted(([norm(v) for v in r.values()] for r in actual.to_pylist()), key=lambda r: repr(r[0]))
    e = sorted(([norm(v) for v in r.values()] for r in expected.to_pylist()), key=lambda r: repr(r[0]))
    assert a == e


def _load(tool, location) -> StaticTable:
    return StaticTable.from_metadata(tool("show", location)["metadata_file"])


@pytest.fixture
def warehouse(tmp_path):
    (tmp_path / "t" / "data").mkdir(parents=True)
    return tmp_path / "t"


# --- every column type, unpartitioned -----------------------------------------------------------

def test_every_type_unpartitioned(tool, warehouse):
    columns = list(COLUMNS)
    tool("create", warehouse, json.dumps({"schema": _tool_schema(columns, required=("i64",))}))
    rows = _rows(columns)
    for r in rows:
        r["i64"] = 5 if r["i64"] is None else r["i64"]
    source = _table(columns, rows, required=("i64",))
    f = _write_file(warehouse / "data" / "all.parquet", source)
    tool("append", warehouse, json.dumps({"files": [f], "summary": {"oxbow.tiered-offsets": '{"0":4}'}}))

    tbl = _load(tool, warehouse)
    fields = {f.name: f for f in tbl.schema().fields}
    for name in columns:
        assert fields[name].field_type == COLUMNS[name][2], name
        assert fields[name].field_id == columns.index(name) + 1
    assert fields["i64"].required and not fields["s"].required
    got = tbl.scan().to_arrow()
    assert got.num_rows == 4
    for name in columns:
        expected = source.column(name).to_pylist()
        actual = got.column(name).to_pylist()
        if name.startswith("f"):
            assert actual == pytest.approx(expected, nan_ok=True), name
        else:
            assert actual == expected, name
    snap = tbl.current_snapshot()
    assert snap.summary["oxbow.tiered-offsets"] == '{"0":4}'
    assert snap.summary.operation.value == "append"
    assert snap.summary["total-records"] == "4"
    assert snap.sequence_number == 1

    # Column bounds are what pyiceberg prunes with: a range outside every file plans nothing.
    assert tbl.scan(row_filter=GreaterThanOrEqual("i32", 2**31 - 1)).to_arrow().num_rows == 1
    assert len(list(tbl.scan(row_filter=LessThan("d", datetime.date(1800, 1, 1))).plan_files())) == 0
    assert len(list(tbl.scan(row_filter=EqualTo("s", "héllo")).plan_files())) == 1
    assert len(list(tbl.scan(row_filter=EqualTo("s", "zzz")).plan_files())) == 0

    # DuckDB reads the data files too.
    count = duckdb.sql(f"select count(*), sum(i32) from read_parquet('{warehouse}/data/*.parquet')").fetchall()[0]
    assert count == (4, -(2**31) + 2**31 - 1 + 7)


def test_uint64_is_refused_with_a_clear_error(tool, warehouse):
    err = tool("create", warehouse, json.dumps({"schema": [{"name": "u", "type": "uint64", "field_id": 1}]}), ok=False)
    assert "uint64" in err


# --- partitioned tables ------------------------------------------------------------------------

PARTITIONED = ["i64", "s", "ts", "tstz", "d", "dec9", "bin", "i32"]


def _group_rows(rows, key):
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return groups


def _partitioned_rows(n=40):
    base = datetime.datetime(2024, 3, 1)
    rows = []
    for i in range(n):
        rows.append({
            "i64": i * 7919 - 100, "s": ["red", "green", "blue", None][i % 4],
            "ts": base + datetime.timedelta(hours=9 * i),
            "tstz": (base + datetime.timedelta(hours=5 * i)).replace(tzinfo=UTC),
            "d": datetime.date(1969, 12, 25) + datetime.timedelta(days=i),
            "dec9": (D(i * 3 - 50) / 4).quantize(D("0.01")), "bin": bytes([i % 5]) * 3, "i32": i,
        })
    return rows


@pytest.mark.parametrize("spec", [
    [{"source": "s", "transform": "identity"}],
    [{"source": "i64", "transform": "bucket[8]"}],
    [{"source": "ts", "transform": "day"}],
    [{"source": "tstz", "transform": "hour"}],
    [{"source": "d", "transform": "month"}, {"source": "s", "transform": "bucket[3]"}],
    [{"source": "ts", "transform": "year"}, {"source": "dec9", "transform": "bucket[5]"}],
    [{"source": "bin", "transform": "bucket[4]"}, {"source": "i32", "transform": "truncate[10]"}],
    [{"source": "s", "transform": "truncate[2]"}, {"source": "dec9", "transform": "identity"}],
], ids=lambda s: "+".join(f"{f['source']}:{f['transform']}" for f in s))
def test_partitioned_scan_and_pruning(tool, warehouse, spec):
    tool("create", warehouse, json.dumps({"schema": _tool_schema(PARTITIONED), "partition": spec}))
    tbl0 = _load(tool, warehouse)
    ice_spec = tbl0.spec()
    schema = tbl0.schema()
    rows = _partitioned_rows()

    # One file per partition tuple, grouped by pyiceberg's own transforms.
    def key(r):
        out = []
        for pf in ice_spec.fields:
            name = schema.find_field(pf.source_id).name
            ice_type = COLUMNS[name][2]
            out.append(pf.transform.transform(ice_type)(_json_value_for_pyiceberg(ice_type, r[name])))
        return tuple(out)

    groups = _group_rows(rows, key)
    files = []
    for n, group in enumerate(groups.values()):
        source = {f["source"]: _json_value(COLUMNS[f["source"]][2], group[0][f["source"]]) for f in spec}
        files.append(_write_file(warehouse / "data" / f"p{n}.parquet", _table(PARTITIONED, group), source))
    tool("append", warehouse, json.dumps({"files": files}))

    tbl = _load(tool, warehouse)
    _same_rows(tbl.scan().to_arrow(), _table(PARTITIONED, rows), "i64")
    # Our partition tuples equal pyiceberg's: every file's partition is its group's key.
    for task in tbl.scan().plan_files():
        record = task.file.partition
        part = tuple(record[i] for i in range(len(ice_spec.fields)))
        members = [r for r in rows if key(r) == part]
        assert members, f"{task.file.file_path} has partition {part}, which no row maps to"
        assert task.file.record_count == len(members)
    # Pruning by a predicate on each source column returns exactly the matching rows.
    probe = rows[13]
    for f in spec:
        name = f["source"]
        if probe[name] is None:
            continue
        got = tbl.scan(row_filter=EqualTo(name, _pyiceberg_literal(COLUMNS[name][2], probe[name]))).to_arrow()
        expected = [r for r in rows if r[name] == probe[name]]
        assert got.num_rows == len(expected), name
        planned = {t.file.file_path for t in
                   tbl.scan(row_filter=EqualTo(name, _pyiceberg_literal(COLUMNS[name][2], probe[name]))).plan_files()}
        holding = {f["path"] for f, g in zip(files, groups.values()) if any(r[name] == probe[name] for r in g)}
        assert holding <= planned, name
        if len(files) > 1 and f["transform"] != "year":  # all rows share one year
            assert len(planned) < len(files), name


def _json_value_for_pyiceberg(ice_type, value):
    """The value pyiceberg's transforms take (ints for dates/timestamps, Decimal, bytes, str)."""
    if value is None:
        return None
    if isinstance(ice_type, it.DateType):
        return (value - datetime.date(1970, 1, 1)).days
    if isinstance(ice_type, (it.TimestampType, it.TimestamptzType)):
        return _micros(value)
    return value


def _pyiceberg_literal(ice_type, value):
    if isinstance(ice_type, it.DateType):
        return value.isoformat()
    if isinstance(ice_type, it.TimestampType):
        return value.isoformat()
    if isinstance(ice_type, it.TimestamptzType):
        return value.isoformat()
    return value


@pytest.mark.parametrize("ice_type,type_name,values", [
    (it.IntegerType(), "int", [0, 1, -1, 34, 2**31 - 1, -(2**31)]),
    (it.LongType(), "long", [0, 34, -(2**63), 2**63 - 1, 123456789012]),
    (it.DateType(), "date", [0, 17486, -1]),
    (it.TimestampType(), "timestamp", [0, 1510871468000000, -1]),
    (it.StringType(), "string", ["", "iceberg", "héllo wörld"]),
    (it.BinaryType(), "binary", [b"", b"\x00\x01\x02\x03", b"\xff" * 40]),
    (it.FixedType(4), "fixed[4]", [b"\x00\x01\x02\x03", b"abcd"]),
    (it.DecimalType(9, 2), "decimal(9, 2)", [D("14.20"), D("-0.01"), D("0.00"), D("9999999.99")]),
    (it.DecimalType(38, 0), "decimal(38, 0)", [D(10**37), D(-(10**37))]),
])
def test_bucket_transform_agrees_with_pyiceberg(tool, ice_type, type_name, values):
    for n in (1, 7, 16, 1024):
        for v in values:
            # Dates and timestamps are given as days and microseconds to both sides.
            arg = v if isinstance(v, int) else _json_value(ice_type, v)
            ours = tool("bucket", type_name, json.dumps(arg), n)["bucket"]
            theirs = BucketTransform(n).transform(ice_type)(v)
            assert ours == theirs, (type_name, v, n)


# --- Avro files as fastavro sees them ----------------------------------------------------------

def _fields_with_ids(schema, found):
    if isinstance(schema, dict):
        if "field-id" in schema:
            found[schema["field-id"]] = schema["name"]
        for v in schema.values():
            _fields_with_ids(v, found)
    elif isinstance(schema, list):
        for v in schema:
            _fields_with_ids(v, found)
    return found


def test_fastavro_reads_manifests_and_sees_field_ids(tool, warehouse):
    spec = [{"source": "i64", "transform": "bucket[4]"}, {"source": "ts", "transform": "day"}]
    tool("create", warehouse, json.dumps({"schema": _tool_schema(PARTITIONED), "partition": spec}))
    rows = _partitioned_rows(4)
    files = [_write_file(warehouse / "data" / f"f{i}.parquet", _table(PARTITIONED, [r]),
                         {"i64": r["i64"], "ts": _micros(r["ts"])}) for i, r in enumerate(rows)]
    tool("append", warehouse, json.dumps({"files": files}))
    tbl = _load(tool, warehouse)
    snap = tbl.current_snapshot()

    with open(snap.manifest_list, "rb") as fh:
        reader = fastavro.reader(fh)
        ids = _fields_with_ids(reader.writer_schema, {})
        assert ids[500] == "manifest_path" and ids[507] == "partitions" and ids[517] == "content"
        assert reader.metadata["format-version"] == "2"
        assert int(reader.metadata["snapshot-id"]) == snap.snapshot_id
        assert reader.metadata["avro.codec"] == "deflate"
        entries = list(reader)
    assert len(entries) == 1
    mf = entries[0]
    assert mf["added_files_count"] == 4 and mf["added_rows_count"] == 4 and mf["sequence_number"] == 1
    assert mf["manifest_length"] == os.path.getsize(mf["manifest_path"])
    buckets = [BucketTransform(4).transform(it.LongType())(r["i64"]) for r in rows]
    assert mf["partitions"][0]["lower_bound"] == struct.pack("<i", min(buckets))
    assert mf["partitions"][0]["upper_bound"] == struct.pack("<i", max(buckets))

    with open(mf["manifest_path"], "rb") as fh:
        reader = fastavro.reader(fh)
        ids = _fields_with_ids(reader.writer_schema, {})
        for fid, name in {0: "status", 1: "snapshot_id", 2: "data_file", 100: "file_path", 102: "partition",
                          108: "column_sizes", 117: "key", 118: "value", 125: "lower_bounds", 134: "content",
                          1000: "i64_bucket", 1001: "ts_day"}.items():
            assert ids[fid] == name
        assert reader.metadata["format-version"] == "2"
        assert reader.metadata["content"] == "data"
        assert json.loads(reader.metadata["partition-spec"])[0]["transform"] == "bucket[4]"
        assert json.loads(reader.metadata["schema"])["fields"][0]["name"] == "i64"
        records = list(reader)
    assert [r["status"] for r in records] == [1, 1, 1, 1]
    assert all(r["sequence_number"] is None for r in records)  # inherited from the manifest list
    by_path = {r["data_file"]["file_path"]: r["data_file"] for r in records}
    for f, row in zip(files, rows):
        df = by_path[f["path"]]
        assert df["partition"]["ts_day"] == datetime.date(1970, 1, 1) + datetime.timedelta(days=_micros(row["ts"]) // 86_400_000_000)
        assert df["record_count"] == 1 and df["file_format"] == "PARQUET"
        lower = {e["key"]: e["value"] for e in df["lower_bounds"]}
        assert lower[1] == struct.pack("<q", row["i64"])


# --- successive commits ------------------------------------------------------------------------

def test_appends_replace_and_expiry_stay_readable(tool, warehouse):
    columns = ["i64", "s", "ts"]
    tool("create", warehouse, json.dumps({"schema": _tool_schema(columns),
                                          "partition": [{"source": "ts", "transform": "day"}],
                                          "properties": {"write.metadata.previous-versions-max": "3"}}))
    base = datetime.datetime(2024, 5, 1)
    all_rows, files, snapshots = [], [], []
    for commit in range(4):
        day = [0, 1, 1, 2][commit]  # c1 and c2 share a day, so they can be compacted together
        batch = [{"i64": commit * 100 + i, "s": f"c{commit}",
                  "ts": base + datetime.timedelta(days=day, minutes=10 * commit + i)} for i in range(5)]
        all_rows += batch
        f = _write_file(warehouse / "data" / f"c{commit}.parquet", _table(columns, batch), {"ts": _micros(batch[0]["ts"])})
        files.append(f)
        out = tool("append", warehouse, json.dumps({"files": [f], "summary": {"oxbow.tiered-offsets": json.dumps({"0": len(all_rows)})}}))
        snapshots.append(out["snapshot_id"])
        tbl = _load(tool, warehouse)
        assert tbl.scan().to_arrow().num_rows == len(all_rows)
    # Time travel to the second snapshot.
    assert tbl.scan(snapshot_id=snapshots[1]).to_arrow().num_rows == 10
    assert [s.snapshot_id for s in tbl.snapshots()] == snapshots

    # Compaction: c1 and c2 (one day partition) are rewritten into one file.
    c1 = [r for r in all_rows if r["s"] == "c1"]
    c2 = [r for r in all_rows if r["s"] == "c2"]
    merged = _write_file(warehouse / "data" / "merged.parquet", _table(columns, c1 + c2), {"ts": _micros(c1[0]["ts"])})
    out = tool("replace", warehouse, json.dumps({"delete": [files[1]["path"], files[2]["path"]], "files": [merged],
                                                 "summary": {"oxbow.compaction": "1"}}))
    tbl = _load(tool, warehouse)
    snap = tbl.current_snapshot()
    assert snap.summary.operation.value == "replace"
    assert snap.summary["deleted-data-files"] == "2"
    assert snap.summary["total-records"] == "20"
    _same_rows(tbl.scan().to_arrow(), _table(columns, all_rows), "i64")
    assert sorted(t.file.file_path for t in tbl.scan().plan_files()) == sorted([files[0]["path"], files[3]["path"], merged["path"]])
    # The summary key of the last append survives in the append's snapshot.
    assert tbl.snapshot_by_id(snapshots[-1]).summary["oxbow.tiered-offsets"] == json.dumps({"0": 20})

    # Expire all but the current snapshot: old data files go, the table still reads.
    out = tool("expire", warehouse, json.dumps({"retain_last": 1}))
    assert out["expired_snapshots"] == 4 and out["deleted_data_files"] == 2
    assert not os.path.exists(files[1]["path"]) and not os.path.exists(files[2]["path"])
    tbl = _load(tool, warehouse)
    assert len(tbl.snapshots()) == 1
    _same_rows(tbl.scan().to_arrow(), _table(columns, all_rows), "i64")
    assert len(tbl.metadata.metadata_log) == 3
    versions = sorted(p.name for p in (warehouse / "metadata").glob("v*.metadata.json"))
    assert len(versions) == 4  # current + previous-versions-max
    assert (warehouse / "metadata" / "version-hint.text").read_text() == str(out["version"])
    # A later append after expiry.
    extra = [{"i64": 999, "s": "late", "ts": base}]
    tool("append", warehouse, json.dumps({"files": [_write_file(warehouse / "data" / "late.parquet", _table(columns, extra), {"ts": _micros(base)})]}))
    tbl = _load(tool, warehouse)
    assert tbl.scan().to_arrow().num_rows == 21
    first_day = And(GreaterThanOrEqual("ts", base.isoformat()),
                    LessThan("ts", (base + datetime.timedelta(days=1)).isoformat()))
    assert tbl.scan(row_filter=first_day).to_arrow().num_rows == 6
    assert len(list(tbl.scan(row_filter=first_day).plan_files())) == 2


# --- our reader on pyiceberg-written manifests -------------------------------------------------

@pytest.mark.parametrize("format_version", [1, 2])
def test_our_reader_reads_pyiceberg_written_manifests(tool, warehouse, format_version):
    from pyiceberg.manifest import write_manifest, write_manifest_list

    spec = [{"source": "i64", "transform": "bucket[4]"}, {"source": "ts", "transform": "day"},
            {"source": "dec9", "transform": "identity"}]
    tool("create", warehouse, json.dumps({"schema": _tool_schema(PARTITIONED), "partition": spec}))
    rows = _partitioned_rows(3)
    files = [_write_file(warehouse / "data" / f"f{i}.parquet", _table(PARTITIONED, [r]),
                         {"i64": r["i64"], "ts": _micros(r["ts"]), "dec9": _json_value(it.DecimalType(9, 2), r["dec9"])})
             for i, r in enumerate(rows)]
    tool("append", warehouse, json.dumps({"files": files}))
    shown = tool("show", warehouse)
    tbl = StaticTable.from_metadata(shown["metadata_file"])
    io = tbl.io
    snap = tbl.current_snapshot()
    ours = snap.manifests(io)[0]
    entries = ours.fetch_manifest_entry(io, discard_deleted=False)

    # pyiceberg rewrites our entries into its own manifest and manifest list.
    manifest_path = str(warehouse / "metadata" / f"pyiceberg-v{format_version}-m0.avro")
    with write_manifest(format_version=format_version, spec=tbl.spec(), schema=tbl.schema(),
                        output_file=io.new_output(manifest_path), snapshot_id=snap.snapshot_id,
                        avro_compression="deflate") as writer:
        for e in entries:
            writer.add_entry(e)
    manifest_file = writer.to_manifest_file()
    list_path = str(warehouse / "metadata" / f"pyiceberg-v{format_version}-list.avro")
    with write_manifest_list(format_version=format_version, output_file=io.new_output(list_path),
                             snapshot_id=snap.snapshot_id, parent_snapshot_id=None,
                             sequence_number=snap.sequence_number, avro_compression="deflate") as list_writer:
        list_writer.add_manifests([manifest_file])

    theirs = tool("read-manifest", manifest_path, shown["metadata_file"])["entries"]
    mine = tool("read-manifest", ours.manifest_path, shown["metadata_file"])["entries"]
    assert len(theirs) == len(mine) == 3
    for a, b in zip(sorted(theirs, key=lambda e: e["path"]), sorted(mine, key=lambda e: e["path"])):
        for key in ("path", "format", "record_count", "file_size", "partition", "lower_bounds", "upper_bounds",
                    "null_value_counts", "status"):
            assert a[key] == b[key], key
    # The partition values match pyiceberg's own transforms of the source values.
    for e in theirs:
        row = rows[int(pathlib.Path(e["path"]).stem[1:])]
        assert bytes.fromhex(e["partition"][0]) == struct.pack("<i", BucketTransform(4).transform(it.LongType())(row["i64"]))
        assert bytes.fromhex(e["partition"][1]) == struct.pack("<i", _micros(row["ts"]) // 86_400_000_000)
        assert bytes.fromhex(e["partition"][2]) == _serialize(it.DecimalType(9, 2), row["dec9"])

    listed = tool("read-manifest-list", list_path)["manifests"]
    assert len(listed) == 1
    m = listed[0]
    assert m["path"] == manifest_path
    assert m["length"] == os.path.getsize(manifest_path)
    assert m["added_files"] == 3 and m["added_rows"] == 3
    assert m["added_snapshot_id"] == snap.snapshot_id
    assert len(m["partitions"]) == 3 and m["partitions"][2]["lower"] is not None
    ours_listed = tool("read-manifest-list", snap.manifest_list)["manifests"][0]
    assert m["partitions"] == ours_listed["partitions"]
