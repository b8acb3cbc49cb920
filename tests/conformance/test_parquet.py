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


def oxbow_write(oxbow, tmp_path, table, codec, dictionary, page_version):
    """`oxbow parquet write` of `table` (through an Arrow stream file) in row groups of 7 rows."""
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out, "--compression", codec, "--dictionary", dictionary,
             "--row-group-rows", 7, "--page-version", page_version)
    return out


@pytest.mark.parametrize(
    "codec,dictionary,page_version",
    [(c, d, v) for c, d, v in itertools.product(CODECS, ["on", "off"], [1, 2]) if v == 1 or c in ("zstd", "none")],
)
def test_oxbow_written_read_by_pyarrow_and_duckdb(oxbow, tmp_path, codec, dictionary, page_version):
    table = all_types_table()
    out = oxbow_write(oxbow, tmp_path, table, codec, dictionary, page_version)

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


def _nested(typ, make):
    """N values of `typ` by make(i): nulls, empty and full values at every level."""
    return pa.array([make(i) for i in range(N)], typ)


def _maybe(i, k, v):
    return None if i % k == 1 else v


def nested_table():
    """Lists, structs, maps and fixed-size lists, nested, with nulls at every level."""
    point = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])
    kv = pa.struct([pa.field("k", pa.string()), pa.field("v", pa.int64(), nullable=False)])
    deep = pa.struct([pa.field("x", pa.list_(pa.float64())),
                      pa.field("y", pa.struct([pa.field("z", pa.bool_())]))])
    cols = {
        "id": pa.array(range(N), pa.int64()),
        "l": _nested(pa.list_(pa.int64()), lambda i: _maybe(i, 7, [_maybe(j, 3, i * 10 + j) for j in range(i % 4)])),
        "ls": _nested(pa.list_(pa.string()), lambda i: _maybe(i, 6, [_maybe(j, 4, "s" * j + str(i)) for j in range(i % 5)])),
        "s": _nested(point, lambda i: _maybe(i, 5, {"a": _maybe(i, 4, i - 20), "b": _maybe(i, 3, "p" + str(i))})),
        "m": _nested(pa.map_(pa.string(), pa.int64()),
                     lambda i: _maybe(i, 8, [("k" + str(j), _maybe(j, 2, i * j)) for j in range(i % 3)])),
        "ll": _nested(pa.list_(pa.list_(pa.int32())),
                      lambda i: _maybe(i, 9, [_maybe(j, 3, [_maybe(k, 2, i + j + k) for k in range((i + j) % 4)])
                                              for j in range(i % 4)])),
        "sl": _nested(deep, lambda i: _maybe(i, 6, {"x": _maybe(i, 4, [i / 2, -0.5][: i % 3]),
                                                    "y": _maybe(i, 5, {"z": _maybe(i, 3, i % 2 == 0)})})),
        "lst": _nested(pa.list_(kv), lambda i: _maybe(i, 4, [_maybe(j, 3, {"k": _maybe(j, 2, "k" + str(j)), "v": i * j})
                                                          for j in range(i % 5)])),
        "lm": _nested(pa.list_(pa.map_(pa.int32(), pa.list_(pa.string()))),
                      lambda i: _maybe(i, 5, [_maybe(j, 2, [(k, _maybe(k, 2, ["v"] * k)) for k in range(j % 3)])
                                              for j in range(i % 3)])),
        "ldec": _nested(pa.list_(pa.decimal128(20, 2)), lambda i: [_maybe(j, 2, D(i * 100 + j) / 100) for j in range(i % 3)]),
        "lts": _nested(pa.list_(pa.timestamp("us", tz="UTC")), lambda i: [_maybe(j, 2, i * 10**9 + j) for j in range(i % 3)]),
        "fsl": _nested(pa.list_(pa.int32(), 2), lambda i: _maybe(i, 3, [_maybe(i, 4, i), -i])),
    }
    schema = pa.schema([pa.field(n, c.type) for n, c in cols.items()]
                       + [pa.field("req", pa.list_(pa.field("item", pa.int64(), nullable=False)), nullable=False)])
    cols["req"] = _nested(schema.field("req").type, lambda i: list(range(i % 3)))
    return pa.table(cols, schema=schema)


def assert_values_equal(got, want):
    """Same columns and values (list element names may differ: "item", "element")."""
    assert got.schema.names == want.schema.names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


@pytest.mark.parametrize("codec,dictionary,page_version",
                         [("zstd", "on", 1), ("none", "off", 1), ("snappy", "on", 2), ("zstd", "off", 2)])
def test_nested_oxbow_written_read_by_pyarrow_and_duckdb(oxbow, tmp_path, codec, dictionary, page_version):
    table = nested_table()
    out = oxbow_write(oxbow, tmp_path, table, codec, dictionary, page_version)
    # pyarrow reads our file exactly as its own file of the same data without ARROW:schema.
    ref = tmp_path / "ref.parquet"
    pq.write_table(table, ref, store_schema=False)
    assert pq.ParquetFile(out).schema.to_arrow_schema() == pq.ParquetFile(ref).schema.to_arrow_schema()
    assert_tables_equal(pq.read_table(out), pq.read_table(ref))
    assert_tables_equal(duck_table(out), duck_table(ref))
    # And we read it back.
    assert_values_equal(oxbow_to_arrow(oxbow, out, tmp_path), table)


@pytest.mark.parametrize("compression", ["SNAPPY", "ZSTD"])
@pytest.mark.parametrize("use_dictionary", [True, False])
@pytest.mark.parametrize("data_page_version", ["1.0", "2.0"])
def test_nested_pyarrow_written_read_by_oxbow(oxbow, tmp_path, compression, use_dictionary, data_page_version):
    table = nested_table()
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, compression=compression, use_dictionary=use_dictionary,
                   data_page_version=data_page_version, row_group_size=10)
    got = oxbow_to_arrow(oxbow, path, tmp_path)
    assert_values_equal(got, table)
    assert got.schema.field("l").type == pa.list_(pa.int64())
    assert got.schema.field("m").type == pa.map_(pa.string(), pa.int64())
    assert got.schema.field("fsl").type == pa.list_(pa.int32())  # Parquet has no fixed-size list


def test_nested_duckdb_written_read_by_oxbow(oxbow, tmp_path):
    src_table = nested_table().drop_columns(["fsl"])  # noqa: F841 (DuckDB scans it)
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"copy (select * from src_table) to '{path}' (format parquet, row_group_size 20)")
    assert_values_equal(oxbow_to_arrow(oxbow, path, tmp_path), pq.read_table(path))


@pytest.mark.parametrize("page_version", [1, 2])
def test_nested_pages_end_at_row_boundaries(oxbow, tmp_path, page_version):
    """A long list column spans several pages (20000 values each); no row straddles two."""
    rows = 30000
    table = pa.table({"l": pa.array([None if i % 11 == 0 else list(range(i % 4)) for i in range(rows)],
                                    pa.list_(pa.int64()))})
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out, "--page-version", page_version)
    assert pq.read_table(out).column("l").to_pylist() == table.column("l").to_pylist()
    assert duck_table(out).column("l").to_pylist() == table.column("l").to_pylist()


def test_nested_field_ids(oxbow, tmp_path):
    """Field ids on the list element, map key and value and struct fields reach Parquet."""
    def fid(n):
        return {"PARQUET:field_id": str(n)}
    schema = pa.schema([
        pa.field("l", pa.list_(pa.field("element", pa.int64(), metadata=fid(2))), metadata=fid(1)),
        pa.field("m", pa.map_(pa.field("key", pa.string(), nullable=False, metadata=fid(4)),
                              pa.field("value", pa.int64(), metadata=fid(5))), metadata=fid(3)),
        pa.field("s", pa.struct([pa.field("a", pa.int32(), metadata=fid(7))]), metadata=fid(6)),
    ])
    table = pa.table({"l": [[1], None], "m": [[("a", 1)], []], "s": [{"a": 1}, None]}, schema=schema)
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "out.parquet"
    oxbow.ok("parquet", "write", src, out)
    f = pq.ParquetFile(out)
    ids = {f.schema.column(i).path: f.schema.column(i).max_definition_level for i in range(4)}
    assert ids == {"l.list.element": 3, "m.key_value.key": 2, "m.key_value.value": 3, "s.a": 2}
    got = f.schema_arrow
    assert got.field("l").metadata[b"PARQUET:field_id"] == b"1"
    assert got.field("l").type.value_field.metadata[b"PARQUET:field_id"] == b"2"
    assert got.field("m").type.key_field.metadata[b"PARQUET:field_id"] == b"4"
    assert got.field("m").type.item_field.metadata[b"PARQUET:field_id"] == b"5"
    assert got.field("s").type.field("a").metadata[b"PARQUET:field_id"] == b"7"
    assert_values_equal(pq.read_table(out), table)


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
