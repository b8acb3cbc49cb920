"""Parquet conformance: pyarrow and DuckDB (the references) against `oxbow parquet`.

- Oxbow writes -> pyarrow and DuckDB read: equal values and types.
- pyarrow and DuckDB write -> Oxbow reads (`oxbow parquet to-arrow`) -> pyarrow reads the stream:
  equal values and types.
- Statistics, field ids and row groups as pyarrow sees them; malformed files fail cleanly.
"""

import datetime
import decimal
import itertools

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

D = decimal.Decimal
N = 53  # rows: several row groups at --row-group-rows 7


def _col(typ, make):
    """N values of `typ`, every 5th null, built by make(i)."""
    return pa.array([None if i % 5 == 3 else make(i) for i in range(N)], typ)


def all_types_table(with_seconds=True, with_local_tz=True):
    cols = {
        "bool": _col(pa.bool_(), lambda i: i % 3 == 0),
        "int8": _col(pa.int8(), lambda i: [-128, 127, 0, -1][i % 4] if i < 8 else i - 30),
        "int16": _col(pa.int16(), lambda i: [-(2**15), 2**15 - 1][i % 2] if i < 4 else i * 100),
        "int32": _col(pa.int32(), lambda i: [-(2**31), 2**31 - 1][i % 2] if i < 4 else i % 7),
        "int64": _col(pa.int64(), lambda i: [-(2**63), 2**63 - 1][i % 2] if i < 4 else i * 10**12),
        "uint8": _col(pa.uint8(), lambda i: 255 if i % 2 else i),
        "uint16": _col(pa.uint16(), lambda i: 2**16 - 1 if i % 2 else i),
        "uint32": _col(pa.uint32(), lambda i: 2**32 - 1 if i % 2 else i),
        "uint64": _col(pa.uint64(), lambda i: 2**64 - 1 if i % 2 else i),
        "float": _col(pa.float32(), lambda i: [0.5, -0.0, float("inf"), -3.25][i % 4]),
        "double": _col(pa.float64(), lambda i: i / 3 if i % 9 else float("-inf")),
        "string": _col(pa.string(), lambda i: ["", "héllo", "z" * 40, "a\x00b"][i % 4] + str(i % 6)),
        "binary": _col(pa.binary(), lambda i: bytes([255 - i % 256, 0, i % 7])),
        "date32": _col(pa.date32(), lambda i: datetime.date(1970, 1, 1) + datetime.timedelta(days=i * 400 - 9000)),
        "ts_ms": _col(pa.timestamp("ms"), lambda i: i * 86_400_123 - 10**9),
        "ts_us_utc": _col(pa.timestamp("us", tz="UTC"), lambda i: i * 10**11),
        "ts_ns": _col(pa.timestamp("ns"), lambda i: i * 10**15 + 7),
        "dec9": _col(pa.decimal128(9, 2), lambda i: D(i * 12345 - 300000) / 100),
        "dec18": _col(pa.decimal128(18, 4), lambda i: D(10**17 - i) / 10**4 * (-1) ** i),
        "dec38": _col(pa.decimal128(38, 6), lambda i: D(10**37 - i * 10**20) / 10**6 * (-1) ** i),
        "dec20": _col(pa.decimal128(20, 0), lambda i: D(i - 26) * 10**18),
        "fsb": _col(pa.binary(3), lambda i: bytes([i % 256, 255, 7])),
    }
    if with_seconds:
        cols["ts_s"] = _col(pa.timestamp("s"), lambda i: i * 3600)
    if with_local_tz:
        cols["ts_us_paris"] = _col(pa.timestamp("us", tz="Europe/Paris"), lambda i: i * 10**9)
    return pa.table(cols)


def expected_after_parquet(table):
    """What a reader without ARROW:schema sees: seconds as ms, any time zone as UTC."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_timestamp(t):
            unit = "ms" if t.unit == "s" else t.unit
            t = pa.timestamp(unit, tz="UTC" if t.tz else None)
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields))


def write_stream(path, table):
    with pa.OSFile(str(path), "wb") as f:
        with pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table)


def read_stream(path):
    with pa.OSFile(str(path), "rb") as f:
        return pa.ipc.open_stream(f).read_all()


def duck_table(path):
    rel = duckdb.sql(f"select * from read_parquet('{path}')")
    out = rel.arrow()
    return out.read_all() if hasattr(out, "read_all") else out


def assert_tables_equal(got, want):
    assert got.schema.names == want.schema.names
    for name in want.column_names:
        g, w = got.column(name), want.column(name)
        assert g.type == w.type, f"{name}: {g.type} != {w.type}"
        assert g.combine_chunks().equals(w.combine_chunks()), f"{name}: {g} != {w}"


def oxbow_to_arrow(oxbow, parquet_path, tmp_path, *extra):
    out = tmp_path / "back.arrows"
    oxbow.ok("parquet", "to-arrow", parquet_path, out, *extra)
    return read_stream(out)


CODECS = ["none", "snappy", "zstd", "lz4", "gzip"]


@pytest.mark.parametrize(
    "codec,dictionary,page_version",
    [(c, d, v) for c, d, v in itertools.product(CODECS, ["on", "off"], [1, 2]) if v == 1 or c in ("zstd", "none")],
)
def test_oxbow_written_read_by_pyarrow_and_duckdb(oxbow, tmp_path, codec, dictionary, page_version):
    table = all_types_table()
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out, "--compression", codec, "--dictionary", dictionary,
             "--row-group-rows", 7, "--page-version", page_version)

    meta = pq.ParquetFile(out).metadata
    assert meta.num_rows == N
    assert meta.num_row_groups == (N + 6) // 7
    assert meta.created_by.startswith("oxbow version")
    want_codec = {"none": "UNCOMPRESSED", "lz4": "LZ4"}  # pyarrow names LZ4_RAW "LZ4"
    want_codec = want_codec.get(codec, codec.upper())
    assert meta.row_group(0).column(0).compression == want_codec

    got = pq.read_table(out)
    assert_tables_equal(got, expected_after_parquet(table))

    # DuckDB reads our file exactly as it reads pyarrow's file of the same data.
    ref = tmp_path / "ref.parquet"
    pq.write_table(expected_after_parquet(table), ref, store_decimal_as_integer=True)
    assert_tables_equal(duck_table(out), duck_table(ref))


@pytest.mark.parametrize("dictionary", ["on", "off"])
def test_all_null_columns(oxbow, tmp_path, dictionary):
    """A column chunk with no value at all (an empty dictionary) is still a valid file."""
    table = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                      "s": pa.array([None] * 3, pa.string()),
                      "d": pa.array([None] * 3, pa.date32()),
                      "x": pa.array([None] * 3, pa.decimal128(20, 3))})
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out, "--dictionary", dictionary)
    assert_tables_equal(pq.read_table(out), table)
    assert_tables_equal(duck_table(out), table)


@pytest.mark.parametrize("compression", ["NONE", "SNAPPY", "ZSTD", "LZ4", "GZIP"])
@pytest.mark.parametrize("use_dictionary", [True, False])
@pytest.mark.parametrize("data_page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("store_decimal_as_integer", [False, True])
def test_pyarrow_written_read_by_oxbow(oxbow, tmp_path, compression, use_dictionary,
                                       data_page_version, store_decimal_as_integer):
    table = all_types_table(with_seconds=False, with_local_tz=False)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, compression=compression, use_dictionary=use_dictionary,
                   data_page_version=data_page_version, row_group_size=10,
                   store_decimal_as_integer=store_decimal_as_integer)
    assert_tables_equal(oxbow_to_arrow(oxbow, path, tmp_path), table)


def test_pyarrow_special_encodings_read_by_oxbow(oxbow, tmp_path):
    table = all_types_table(with_seconds=False, with_local_tz=False)
    path = tmp_path / "enc.parquet"
    pq.write_table(table, path, use_dictionary=False, data_page_version="2.0",
                   column_encoding={"int32": "DELTA_BINARY_PACKED", "int64": "DELTA_BINARY_PACKED",
                                    "string": "DELTA_BYTE_ARRAY", "binary": "DELTA_LENGTH_BYTE_ARRAY",
                                    "double": "BYTE_STREAM_SPLIT", "float": "BYTE_STREAM_SPLIT"})
    assert_tables_equal(oxbow_to_arrow(oxbow, path, tmp_path), table)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("codec", ["snappy", "zstd", "uncompressed", "gzip", "lz4"])
def test_duckdb_written_read_by_oxbow(oxbow, tmp_path, version, codec):
    src_table = all_types_table(with_seconds=False, with_local_tz=False)  # noqa: F841 (DuckDB scans it)
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"copy (select * from src_table) to '{path}' "
               f"(format parquet, parquet_version {version}, compression {codec}, row_group_size 20)")
    # pyarrow 26 cannot read some of DuckDB's v2 DELTA_BINARY_PACKED pages ("InitBlock EOF"), so
    # DuckDB reading its own file is the reference for v2.
    # DuckDB returns its own SQL types (e.g. timestamp[us] for a MILLIS column), so values are
    # compared after casting to them.
    got = oxbow_to_arrow(oxbow, path, tmp_path)
    if version == "v1":
        assert_tables_equal(got, pq.read_table(path))
    else:
        ref = duck_table(path)
        assert_tables_equal(got.cast(ref.schema), ref)


def test_projection(oxbow, tmp_path):
    table = all_types_table()
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    got = oxbow_to_arrow(oxbow, path, tmp_path, "--columns", "string,int8")
    assert got.column_names == ["string", "int8"]
    assert got.column("string").equals(table.column("string"))


def test_statistics_and_field_ids(oxbow, tmp_path):
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"}),
        pa.field("u", pa.uint32(), metadata={"PARQUET:field_id": "2"}),
        pa.field("s", pa.string(), metadata={"PARQUET:field_id": "3"}),
        pa.field("dec", pa.decimal128(25, 2), metadata={"PARQUET:field_id": "4"}),
        pa.field("f", pa.float64(), metadata={"PARQUET:field_id": "5"}),
    ])
    table = pa.table({
        "id": [5, -3, 9],
        "u": pa.array([1, 2**32 - 1, None], pa.uint32()),
        "s": ["b", "\u00ff", None],
        "dec": pa.array([D("-1.50"), D("2.25"), None], pa.decimal128(25, 2)),
        "f": [float("nan"), -0.0, 1.0],
    }, schema=schema)
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out)
    f = pq.ParquetFile(out)
    assert [f.schema_arrow.field(i).metadata[b"PARQUET:field_id"] for i in range(5)] == [b"1", b"2", b"3", b"4", b"5"]
    assert not f.schema_arrow.field("id").nullable
    stats = [f.metadata.row_group(0).column(i).statistics for i in range(5)]
    assert (stats[0].min, stats[0].max, stats[0].null_count) == (-3, 9, 0)
    assert (stats[1].min, stats[1].max, stats[1].null_count) == (1, 2**32 - 1, 1)
    assert (stats[2].min, stats[2].max) == ("b", "\u00ff")
    assert (stats[3].min, stats[3].max) == (D("-1.50"), D("2.25"))
    assert (stats[4].min, stats[4].max) == (-0.0, 1.0)
    # Row group pruning with min/max works in pyarrow's dataset filter too.
    assert pq.read_table(out, filters=[("id", ">", 100)]).num_rows == 0


def test_seconds_are_stored_as_milliseconds(oxbow, tmp_path):
    table = pa.table({"t": pa.array([0, 1, None, -5], pa.timestamp("s", tz="America/New_York"))})
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out)
    got = pq.read_table(out).column("t")
    assert got.type == pa.timestamp("ms", tz="UTC")
    assert got.to_pylist() == table.column("t").cast(pa.timestamp("ms", tz="UTC")).to_pylist()


def test_write_from_csv_and_jsonl(oxbow, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("a,b,c\n1,x,1.5\n2,,2.5\n")
    out = tmp_path / "csv.parquet"
    oxbow.ok("parquet", "write", csv, out)
    assert pq.read_table(out).to_pydict()["a"] == [1, 2]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"a": 1, "s": "x"}\n{"a": null, "s": "y"}\n')
    out2 = tmp_path / "j.parquet"
    oxbow.ok("parquet", "write", jsonl, out2)
    assert pq.read_table(out2).to_pydict() == {"a": [1, None], "s": ["x", "y"]}


def test_inspection_commands(oxbow, tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3], "s": ["a", "b", None]}), path, row_group_size=2)
    schema = oxbow.ok("parquet", "schema", path).stdout.decode()
    assert "x: int64" in schema and "s: string" in schema
    meta = oxbow.ok("parquet", "meta", path).stdout.decode()
    assert "num_row_groups: 2" in meta and "min=1" in meta and "nulls=1" in meta
    rows = oxbow.ok("parquet", "cat", path, "--format", "jsonl").stdout.decode().splitlines()
    assert rows == ['{"x":1,"s":"a"}', '{"x":2,"s":"b"}', '{"x":3,"s":null}']


def test_nested_columns_are_rejected(oxbow, tmp_path):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"l": [[1, 2], None]}), path)
    err = oxbow.fails("parquet", "to-arrow", path, tmp_path / "x.arrows")
    assert "nested" in err or "repeated" in err


@pytest.mark.parametrize("damage", ["truncate_footer", "truncate_middle", "bad_magic", "bad_length",
                                    "garbage", "empty", "corrupt_pages"])
def test_malformed_files_fail_cleanly(oxbow, tmp_path, damage):
    good = tmp_path / "good.parquet"
    pq.write_table(all_types_table(with_seconds=False, with_local_tz=False), good, compression="snappy")
    data = bytearray(good.read_bytes())
    if damage == "truncate_footer":
        data = data[:-3]
    elif damage == "truncate_middle":
        data = data[: len(data) // 2]
    elif damage == "bad_magic":
        data[-1:] = b"X"
    elif damage == "bad_length":
        data[-8:-4] = (len(data) * 2).to_bytes(4, "little")
    elif damage == "garbage":
        data = bytearray(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    elif damage == "empty":
        data = bytearray()
    elif damage == "corrupt_pages":
        for i in range(8, len(data) // 2, 37):
            data[i] ^= 0x5A
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    err = oxbow.fails("parquet", "to-arrow", bad, tmp_path / "x.arrows")
    assert err.startswith("oxbow: error:")
