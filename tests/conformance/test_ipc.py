"""Arrow IPC conformance: pyarrow (the reference) against `oxbow ipc`.

pyarrow writes -> oxbow reads and rewrites -> pyarrow reads: everything must come back equal,
value for value and type for type, including field and schema metadata and batch boundaries.
"""

import base64
import datetime
import decimal
import io
import json
import math
import pathlib
import random
import struct

import pyarrow as pa
import pytest

CODECS = [None, "lz4", "zstd"]
FORMATS = ["stream", "file"]

D = decimal.Decimal


def _ts(unit, tz=None):
    return pa.timestamp(unit, tz=tz)


# name -> (type, values). Every list has a None and the type's extremes where it has them.
TYPES = {
    "bool": (pa.bool_(), [True, False, None, True]),
    "int8": (pa.int8(), [-(2**7), 2**7 - 1, None, 0, -1]),
    "int16": (pa.int16(), [-(2**15), 2**15 - 1, None, 0]),
    "int32": (pa.int32(), [-(2**31), 2**31 - 1, None, 0]),
    "int64": (pa.int64(), [-(2**63), 2**63 - 1, None, 2**53 + 1, -(2**53) - 1]),
    "uint8": (pa.uint8(), [0, 2**8 - 1, None]),
    "uint16": (pa.uint16(), [0, 2**16 - 1, None]),
    "uint32": (pa.uint32(), [0, 2**32 - 1, None]),
    "uint64": (pa.uint64(), [0, 2**64 - 1, None, 2**53 + 1]),
    "float": (pa.float32(), [0.1, -0.0, None, float("nan"), float("inf"), -float("inf"), 3.4e38, 1e-45]),
    "double": (pa.float64(), [0.1, -0.0, None, float("nan"), float("inf"), -float("inf"), 1.7976931348623157e308, 5e-324, 3.0]),
    "string": (pa.string(), ["", "oxbow", None, "héllo wörld", "✓ 🌊", 'quote " and \\ and \n\t', "x" * 1000]),
    "binary": (pa.binary(), [b"", b"\x00\xff\x7f", None, bytes(range(256))]),
    "date32": (pa.date32(), [datetime.date(1970, 1, 1), datetime.date(1, 1, 1), None, datetime.date(9999, 12, 31), datetime.date(1969, 12, 31), datetime.date(2024, 2, 29)]),
    "decimal128_1_0": (pa.decimal128(1, 0), [D("9"), D("-9"), None, D("0")]),
    "decimal128_10_2": (pa.decimal128(10, 2), [D("-123.45"), D("12345678.90"), None, D("0.05"), D("-0.01")]),
    "decimal128_18_4": (pa.decimal128(18, 4), [D("99999999999999.9999"), D("-99999999999999.9999"), None, D("1.0000")]),
    "decimal128_38_0": (pa.decimal128(38, 0), [D("9" * 38), D("-" + "9" * 38), None, D("0")]),
    "decimal128_38_10": (pa.decimal128(38, 10), [D("9" * 28 + "." + "9" * 10), D("-" + "9" * 28 + "." + "9" * 10), None, D("-0.0000000001")]),
    "decimal128_38_38": (pa.decimal128(38, 38), [D("0." + "9" * 38), D("-0." + "9" * 38), None]),
    "fixed_size_binary_1": (pa.binary(1), [b"\x00", b"\xff", None]),
    "fixed_size_binary_16": (pa.binary(16), [bytes(range(16)), b"\xff" * 16, None]),
}
_TS_VALUES = {
    "s": [0, -1, None, 253402214399, -62135510400],
    "ms": [0, -1, None, 1700000000123, -62135510400000],
    "us": [0, -1, None, 1700000000123456, 253402214399999999],
    "ns": [0, -1, None, 1700000000123456789, -(2**63) + 1, 2**63 - 1],
}
for _unit, _values in _TS_VALUES.items():
    for _tz in [None, "UTC", "+05:30", "America/New_York"]:
        _name = f"timestamp_{_unit}" + ("" if _tz is None else "_" + _tz.replace("/", "_").replace("+", "p").replace(":", ""))
        TYPES[_name] = (_ts(_unit, _tz), _values)


def column(name: str, length: int) -> pa.Array:
    """`length` values of TYPES[name], cycling through its list."""
    typ, values = TYPES[name]
    return pa.array([values[i % len(values)] for i in range(length)], typ)


def single_column_table(name: str) -> pa.Table:
    typ, values = TYPES[name]
    field = pa.field(name, typ, metadata={"PARQUET:field_id": "1"})
    return pa.Table.from_arrays([pa.array(values, typ)], schema=pa.schema([field]))


def all_types_batches() -> tuple[pa.Schema, list[pa.RecordBatch]]:
    """Several batches of every type: a full one, an empty one, a sliced one, a short one."""
    names = list(TYPES)
    fields = [pa.field(n, TYPES[n][0], metadata={"k": n}) for n in names]
    fields.append(pa.field("id", pa.int64(), nullable=False))
    schema = pa.schema(fields, metadata={"origin": "pyarrow", "note": "ü"})
    n = 37
    full = pa.RecordBatch.from_arrays([column(name, n) for name in names] + [pa.array(range(n), pa.int64())], schema=schema)
    return schema, [full, full.slice(0, 0), full.slice(5, 19), full.slice(30, 7), full]


def write_ipc(path, schema, batches, fmt="stream", codec=None):
    options = pa.ipc.IpcWriteOptions(compression=codec)
    opener = pa.ipc.new_stream if fmt == "stream" else pa.ipc.new_file
    with opener(str(path), schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)


def read_ipc(path, fmt):
    """Returns (schema, batches) as pyarrow reads them, insisting on the given format."""
    if fmt == "file":
        reader = pa.ipc.open_file(str(path))
        return reader.schema, [reader.get_batch(i) for i in range(reader.num_record_batches)]
    reader = pa.ipc.open_stream(str(path))
    return reader.schema, list(reader)


def assert_column_equal(got: pa.Array, want: pa.Array, where: str):
    assert got.type == want.type, f"{where}: type {got.type} != {want.type}"
    if pa.types.is_floating(want.type):
        # NaN != NaN in Array.equals: compare the bit patterns (nulls are compared separately).
        as_int = pa.int32() if want.type == pa.float32() else pa.int64()
        assert got.is_null().equals(want.is_null()), f"{where}: nulls differ"
        assert got.view(as_int).equals(want.view(as_int)), f"{where}: {got} != {want}"
    else:
        assert got.equals(want), f"{where}: {got.to_pylist()} != {want.to_pylist()}"


def assert_batches_equal(got_schema, got_batches, want_schema, want_batches):
    assert got_schema.equals(want_schema, check_metadata=True), f"\n{got_schema}\n!=\n{want_schema}"
    assert [b.num_rows for b in got_batches] == [b.num_rows for b in want_batches]
    for i, (g, w) in enumerate(zip(got_batches, want_batches)):
        assert g.schema.equals(w.schema, check_metadata=True)
        for c, name in enumerate(w.schema.names):
            assert_column_equal(g.column(c), w.column(c), f"batch {i}, column {name}")


# ---- copy: pyarrow -> oxbow -> pyarrow ----


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(TYPES))
def test_copy_each_type(oxbow, tmp_path, name, fmt):
    table = single_column_table(name)
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, table.schema, table.to_batches(), fmt)
    oxbow.ok("ipc", "copy", src, dst)
    schema, batches = read_ipc(dst, fmt)  # the output keeps the input's format
    assert_batches_equal(schema, batches, table.schema, table.to_batches())


@pytest.mark.parametrize("out_codec", CODECS, ids=lambda c: f"out-{c or 'none'}")
@pytest.mark.parametrize("out_fmt", FORMATS, ids=lambda f: f"out-{f}")
@pytest.mark.parametrize("in_codec", CODECS, ids=lambda c: f"in-{c or 'none'}")
@pytest.mark.parametrize("in_fmt", FORMATS, ids=lambda f: f"in-{f}")
def test_copy_all_types_matrix(oxbow, tmp_path, in_fmt, in_codec, out_fmt, out_codec):
    schema, batches = all_types_batches()
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, schema, batches, in_fmt, in_codec)
    oxbow.ok("ipc", "copy", src, dst, "--format", out_fmt, "--compression", out_codec or "none")
    got_schema, got_batches = read_ipc(dst, out_fmt)
    assert_batches_equal(got_schema, got_batches, schema, batches)


def test_copy_compressed_output_is_compressed(oxbow, tmp_path):
    schema = pa.schema([pa.field("s", pa.string())])
    batch = pa.record_batch([pa.array(["oxbow " * 50] * 2000)], schema=schema)
    src = tmp_path / "in.arrows"
    write_ipc(src, schema, [batch])
    sizes = {}
    for codec in ["none", "lz4", "zstd"]:
        dst = tmp_path / f"out-{codec}.arrows"
        oxbow.ok("ipc", "copy", src, dst, "--compression", codec)
        sizes[codec] = dst.stat().st_size
        got_schema, got = read_ipc(dst, "stream")
        assert_batches_equal(got_schema, got, schema, [batch])
    assert sizes["lz4"] < sizes["none"] / 10
    assert sizes["zstd"] < sizes["none"] / 10


def test_copy_stdin_to_stdout(oxbow, tmp_path):
    schema, batches = all_types_batches()
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        for b in batches:
            writer.write_batch(b)
    out = oxbow.ok("ipc", "copy", "-", "-", "--compression", "zstd", input=sink.getvalue()).stdout
    reader = pa.ipc.open_stream(out)
    assert_batches_equal(reader.schema, list(reader), schema, batches)


def test_copy_many_batches(oxbow, tmp_path):
    schema = pa.schema([pa.field("x", pa.int64()), pa.field("s", pa.string())])
    batches = [pa.record_batch([pa.array([i, None, -i]), pa.array([str(i), "", None])], schema=schema) for i in range(300)]
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, schema, batches, "file", "lz4")
    oxbow.ok("ipc", "copy", src, dst, "--format", "stream")
    got_schema, got = read_ipc(dst, "stream")
    assert_batches_equal(got_schema, got, schema, batches)


@pytest.mark.parametrize(
    "columns",
    [["int64"], ["string", "bool"], ["id", "decimal128_38_10", "timestamp_ns_UTC"], ["binary", "date32", "float", "fixed_size_binary_16"]],
    ids=lambda c: ",".join(c),
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_copy_projected(oxbow, tmp_path, columns, fmt):
    schema, batches = all_types_batches()
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, schema, batches, fmt, "zstd")
    oxbow.ok("ipc", "copy", src, dst, "--columns", ",".join(columns))
    got_schema, got = read_ipc(dst, fmt)
    want = [b.select(columns) for b in batches]
    assert_batches_equal(got_schema, got, schema.empty_table().select(columns).schema, want)


# ---- nested types: pyarrow -> oxbow -> pyarrow, and their JSON text ----


POINT = pa.struct([("x", pa.float64()), pa.field("tag", pa.string(), nullable=False)])
# name -> (type, values): nulls at every level, empty containers, sliced children.
NESTED = {
    "list_int64": (pa.list_(pa.int64()), [[1, None, -(2**63)], None, [], [None], [2**63 - 1]]),
    "list_list_string": (pa.list_(pa.list_(pa.string())),
                         [[["a", None], [], None], None, [[]], [["✓ 🌊", ""]]]),
    "list_item_not_null": (pa.list_(pa.field("v", pa.int32(), nullable=False)), [[1, 2], None, []]),
    "struct": (pa.struct([("a", pa.int32()), ("b", pa.string()), ("pts", pa.list_(POINT))]),
               [{"a": 1, "b": "x", "pts": [{"x": 0.5, "tag": "t"}, None]}, None,
                {"a": None, "b": None, "pts": None}, {"a": -1, "b": "", "pts": []}]),
    "map_string_list": (pa.map_(pa.string(), pa.list_(pa.int64())),
                        [[("a", [1, None]), ("b", None)], None, [], [("", [])]]),
    "map_int_struct": (pa.map_(pa.int32(), pa.struct([("d", pa.decimal128(10, 2))])),
                       [[(1, {"d": D("1.25")}), (-2, None)], None, [(0, {"d": None})]]),
    "fixed_size_list": (pa.list_(pa.int32(), 3), [[1, 2, 3], None, [None, None, 7], [0, -1, 2**31 - 1]]),
    "list_timestamp_tz": (pa.list_(pa.timestamp("us", tz="UTC")), [[0, None, 1700000000123456], None]),
}


def nested_table(name: str, rows: int = 23) -> pa.Table:
    typ, values = NESTED[name]
    field = pa.field(name, typ, metadata={"PARQUET:field_id": "1"})
    return pa.Table.from_arrays([pa.array([values[i % len(values)] for i in range(rows)], typ)],
                                schema=pa.schema([field]))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(NESTED))
def test_copy_each_nested_type(oxbow, tmp_path, name, fmt, codec):
    table = nested_table(name)
    batches = [table.to_batches()[0].slice(0, 5), table.to_batches()[0].slice(5, 0),
               table.to_batches()[0].slice(7, 16)]
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, table.schema, batches, fmt, codec)
    oxbow.ok("ipc", "copy", src, dst, "--compression", codec or "none")
    schema, got = read_ipc(dst, fmt)
    assert_batches_equal(schema, got, table.schema, batches)
    for b in got:
        b.validate(full=True)


def test_copy_nested_projected(oxbow, tmp_path):
    arrays = [nested_table(n).column(0).combine_chunks() for n in NESTED]
    batch = pa.RecordBatch.from_arrays(arrays, names=list(NESTED))
    src, dst = tmp_path / "in.arrow", tmp_path / "out.arrow"
    write_ipc(src, batch.schema, [batch, batch.slice(3, 11)], "stream", "zstd")
    columns = ["map_int_struct", "list_int64", "struct"]
    oxbow.ok("ipc", "copy", src, dst, "--columns", ",".join(columns))
    schema, got = read_ipc(dst, "stream")
    want = [batch.select(columns), batch.slice(3, 11).select(columns)]
    assert_batches_equal(schema, got, want[0].schema, want)


def expected_nested_json(arr: pa.Array, i: int):
    """docs/text-formats.md: lists as arrays, structs as objects, maps as objects keyed by the
    key's text; leaves as expected_json."""
    typ = arr.type
    if not arr[i].is_valid:
        return None
    if pa.types.is_map(typ):
        entries = arr[i].values
        keys, items = entries.field(0), entries.field(1)
        out = {}
        for k in range(len(entries)):
            key = expected_nested_json(keys, k)
            out[key if isinstance(key, str) else json.dumps(key)] = expected_nested_json(items, k)
        return out
    if pa.types.is_list(typ) or pa.types.is_fixed_size_list(typ):
        values = arr[i].values
        return [expected_nested_json(values, k) for k in range(len(values))]
    if pa.types.is_struct(typ):
        return {typ.field(j).name: expected_nested_json(arr.field(j), i)
                for j in range(typ.num_fields)}
    return expected_json(arr, i)


@pytest.mark.parametrize("name", list(NESTED))
def test_cat_jsonl_each_nested_type(oxbow, tmp_path, name):
    table = nested_table(name)
    path = tmp_path / "in.arrow"
    write_ipc(path, table.schema, [table.to_batches()[0].slice(2, 19)], "file")
    lines = oxbow.ok("ipc", "cat", path, "--format", "jsonl").stdout.decode().splitlines()
    arr = table.column(0).combine_chunks().slice(2, 19)
    assert [json.loads(line)[name] for line in lines] == [
        expected_nested_json(arr, i) for i in range(len(arr))]


def test_schema_of_nested_types_matches_pyarrow(oxbow, tmp_path):
    arrays = [nested_table(n).column(0).combine_chunks() for n in NESTED]
    schema = pa.schema([pa.field(n, a.type, metadata={"k": n}) for n, a in zip(NESTED, arrays)])
    path = tmp_path / "in.arrow"
    write_ipc(path, schema, [pa.RecordBatch.from_arrays(arrays, schema=schema)], "file")
    out = oxbow.ok("ipc", "schema", path).stdout.decode()
    assert out.rstrip("\n") == str(schema)


# ---- schema ----


SCHEMAS = {
    "all_types": lambda: all_types_batches()[0],
    "not_null": lambda: pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string())]),
    "field_metadata": lambda: pa.schema([pa.field("a", pa.int32(), metadata={"PARQUET:field_id": "1", "doc": "x y"}), pa.field("b", pa.float64())]),
    "long_metadata": lambda: pa.schema(
        [pa.field("a", pa.int8(), metadata={"k": "v" * 100, "kk" * 20: "w" * 40})],
        metadata={"m" * 10: "y" * 61, "z": "short"},
    ),
    "empty": lambda: pa.schema([]),
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_schema_matches_pyarrow(oxbow, tmp_path, name):
    schema = SCHEMAS[name]()
    path = tmp_path / "in.arrows"
    write_ipc(path, schema, [])
    out = oxbow.ok("ipc", "schema", path).stdout.decode()
    assert out == (str(schema) + "\n" if str(schema) else "")


# ---- cat ----


def _plain_timestamp(dt: datetime.datetime, unit: str) -> str:
    text = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if unit == "ms":
        text += f".{dt.microsecond // 1000:03d}"
    elif unit == "us":
        text += f".{dt.microsecond:06d}"
    return text


def expected_timestamp(arr: pa.Array, i: int) -> str | None:
    """docs/text-formats.md: ISO-8601, unit precision, local time + offset for a fixed-offset
    zone, UTC + "Z" for any other zone."""
    typ = arr.type
    if not arr[i].is_valid:
        return None
    raw = arr.cast(pa.int64())[i].as_py()
    if typ.unit == "ns":
        secs, frac = divmod(raw, 10**9)
        offset = 0
        if typ.tz and typ.tz.startswith(("+", "-")):
            sign = -1 if typ.tz[0] == "-" else 1
            offset = sign * (int(typ.tz[1:3]) * 3600 + int(typ.tz[4:6]) * 60)
        dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=secs + offset)
        text = _plain_timestamp(dt, "s") + f".{frac:09d}"
    else:
        dt = arr[i].as_py()  # datetime: aware (in the column's zone) when typ.tz is set
        if typ.tz and not typ.tz.startswith(("+", "-")):
            dt = dt.astimezone(datetime.timezone.utc)
        text = _plain_timestamp(dt, typ.unit)
    if typ.tz is None:
        return text
    if typ.tz.startswith(("+", "-")):
        return text + typ.tz
    return text + "Z"


def expected_json(arr: pa.Array, i: int):
    """The JSON value docs/text-formats.md specifies for arr[i], from pyarrow's to_pylist."""
    typ = arr.type
    value = arr[i].as_py() if not pa.types.is_timestamp(typ) else None
    if pa.types.is_timestamp(typ):
        return expected_timestamp(arr, i)
    if value is None:
        return None
    if pa.types.is_floating(typ):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if pa.types.is_decimal(typ):
        return format(value, "f")
    if pa.types.is_date(typ):
        return value.isoformat()
    if pa.types.is_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return base64.b64encode(value).decode()
    return value  # bool, ints, strings


def json_value_equal(got, want, typ) -> bool:
    if typ == pa.float32() and isinstance(want, float) and isinstance(got, float):
        # The text is float32's shortest form; compare as float32.
        return struct.pack("<f", got) == struct.pack("<f", want)
    if isinstance(want, float) and isinstance(got, float):
        return struct.pack("<d", got) == struct.pack("<d", want)
    return type(got) is type(want) and got == want


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(TYPES))
def test_cat_jsonl_each_type(oxbow, tmp_path, name, fmt):
    table = single_column_table(name)
    path = tmp_path / "in.arrow"
    write_ipc(path, table.schema, table.to_batches(), fmt)
    lines = oxbow.ok("ipc", "cat", path, "--format", "jsonl").stdout.decode().splitlines()
    arr = table.column(0).combine_chunks()
    assert len(lines) == len(arr)
    for i, line in enumerate(lines):
        obj = json.loads(line)
        assert list(obj) == [name]
        want = expected_json(arr, i)
        assert json_value_equal(obj[name], want, arr.type), f"row {i}: {obj[name]!r} != {want!r}"


def test_cat_jsonl_all_types_columns_and_limit(oxbow, tmp_path):
    schema, batches = all_types_batches()
    path = tmp_path / "in.arrow"
    write_ipc(path, schema, batches, "file", "zstd")
    columns = ["id", "string", "decimal128_10_2", "timestamp_us_UTC"]
    out = oxbow.ok("ipc", "cat", path, "-f", "jsonl", "--columns", ",".join(columns), "--limit", "40").stdout
    rows = [json.loads(line) for line in out.decode().splitlines()]
    table = pa.Table.from_batches(batches).select(columns)
    assert len(rows) == 40
    for c in columns:
        arr = table.column(c).combine_chunks()
        for i, row in enumerate(rows):
            assert list(row) == columns
            assert json_value_equal(row[c], expected_json(arr, i), arr.type)


def test_cat_csv(oxbow, tmp_path):
    import csv

    schema = pa.schema([pa.field("s", pa.string()), pa.field("n", pa.int64()), pa.field("d", pa.decimal128(5, 2))])
    batch = pa.record_batch(
        [pa.array(['a,b', 'say "hi"', "two\nlines", "", None, "plain"]), pa.array([1, None, -3, 4, 5, 6]), pa.array([D("1.50"), D("-2.00"), None, D("0.01"), D("3.14"), D("0.00")])],
        schema=schema,
    )
    path = tmp_path / "in.arrows"
    write_ipc(path, schema, [batch])
    out = oxbow.ok("ipc", "cat", path, "--format", "csv").stdout.decode()
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == ["s", "n", "d"]
    assert rows[1:] == [
        ["a,b", "1", "1.50"],
        ['say "hi"', "", "-2.00"],
        ["two\nlines", "-3", ""],
        ["", "4", "0.01"],
        ["", "5", "3.14"],
        ["plain", "6", "0.00"],
    ]
    # An empty string is quoted; a null is an empty unquoted field.
    assert '\n"",4,0.01\n' in out and "\n,5,3.14\n" in out
    # pyarrow's CSV reader reads it back to the same values.
    import pyarrow.csv as pacsv

    back = pacsv.read_csv(
        io.BytesIO(out.encode()),
        convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=True, quoted_strings_can_be_null=False),
    )
    assert back.column("s").to_pylist() == batch.column(0).to_pylist()
    assert back.column("n").to_pylist() == batch.column(1).to_pylist()
    assert back.column("d").to_pylist() == batch.column(2).to_pylist()


def test_cat_table(oxbow, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    batches = [pa.record_batch([pa.array([1, 22, None]), pa.array(["a", None, "héllo"])], schema=schema)] * 2
    path = tmp_path / "in.arrow"
    write_ipc(path, schema, batches, "file")
    out = oxbow.ok("ipc", "cat", path).stdout.decode()
    # Numbers align right, text left; the last column carries no trailing spaces.
    rows = "   1  a\n  22  null\nnull  héllo\n"
    assert out == "  id  name\n----  -----\n" + rows * 2
    assert oxbow.ok("ipc", "cat", path, "-n", "0").stdout.decode() == "id  name\n--  ----\n"


# ---- bad input: exit code 1 and a message, never a crash ----


@pytest.fixture(scope="module")
def good_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("good")
    schema, batches = all_types_batches()
    files = {}
    for fmt in FORMATS:
        for codec in CODECS:
            path = d / f"{fmt}-{codec}.arrow"
            write_ipc(path, schema, batches, fmt, codec)
            files[(fmt, codec)] = path.read_bytes()
    return files


def truncated(path: pathlib.Path, data: bytes, fraction: float) -> pathlib.Path:
    """Writes the first `fraction` of `data` (at least a byte) to `path`."""
    path.write_bytes(data[: max(1, int(len(data) * fraction))])
    return path


@pytest.mark.parametrize("fraction", [0.0001, 0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_truncated_file(oxbow, tmp_path, good_files, codec, fraction):
    path = truncated(tmp_path / "t.arrow", good_files[("file", codec)], fraction)
    err = oxbow.fails("ipc", "cat", path, "-f", "jsonl")
    assert err.startswith("oxbow: error: ") and "t.arrow" in err


@pytest.mark.parametrize("fraction", [0.0001, 0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_truncated_stream(oxbow, tmp_path, good_files, codec, fraction):
    path = truncated(tmp_path / "t.arrows", good_files[("stream", codec)], fraction)
    out = tmp_path / "out.arrows"
    proc = oxbow.run("ipc", "copy", path, out)
    # A stream cut exactly between messages is a valid shorter stream: do what pyarrow does.
    try:
        reader = pa.ipc.open_stream(str(path))
        want = (reader.schema, list(reader))
    except (pa.ArrowInvalid, OSError):
        want = None
    if want is not None:
        assert proc.returncode == 0, proc.stderr
        assert_batches_equal(*read_ipc(out, "stream"), *want)
        return
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.decode().startswith("oxbow: error: ")
    assert not out.exists(), "a failed copy must not leave a partial file"


def test_garbage(oxbow, tmp_path):
    rng = random.Random(7)
    for i in range(20):
        path = tmp_path / f"g{i}"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000))))
        err = oxbow.fails("ipc", "cat", path)
        assert "not an Arrow IPC stream or file" in err or "not a valid Arrow IPC file" in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_bit_flips_never_crash(oxbow, tmp_path, good_files, fmt):
    data = good_files[(fmt, "lz4")]
    rng = random.Random(11)
    path = tmp_path / "flip.arrow"
    for _ in range(40):
        mutated = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(mutated))
        proc = oxbow.run("ipc", "cat", path, "-f", "jsonl")
        assert proc.returncode in (0, 1), proc.stderr


def test_empty_file(oxbow, tmp_path):
    path = tmp_path / "empty.arrow"
    path.write_bytes(b"")
    err = oxbow.fails("ipc", "schema", path)
    assert "is empty" in err and "not an Arrow IPC stream or file" in err
    err = oxbow.fails("ipc", "cat", "-", input=b"")
    assert "standard input is empty" in err


def test_missing_file(oxbow, tmp_path):
    err = oxbow.fails("ipc", "cat", tmp_path / "nope.arrow")
    assert err.strip() == f"oxbow: error: cannot open '{tmp_path / 'nope.arrow'}': No such file or directory"


def test_directory(oxbow, tmp_path):
    err = oxbow.fails("ipc", "schema", tmp_path)
    assert "is a directory" in err


@pytest.mark.parametrize("command", ["cat", "copy"])
def test_unknown_column(oxbow, tmp_path, command):
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    src = tmp_path / "in.arrows"
    write_ipc(src, schema, [])
    args = ["ipc", command, src] + ([tmp_path / "out"] if command == "copy" else []) + ["--columns", "a,zz"]
    err = oxbow.fails(*args)
    assert "unknown column 'zz'" in err and "a, b" in err


def test_same_input_and_output(oxbow, tmp_path):
    schema, batches = all_types_batches()
    path = tmp_path / "in.arrow"
    write_ipc(path, schema, batches, "file")
    before = path.read_bytes()
    err = oxbow.fails("ipc", "copy", path, path)
    assert "same file" in err
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [[], ["ipc"], ["ipc", "cat"], ["ipc", "cat", "x", "--format", "xml"], ["ipc", "copy", "a", "b", "--compression", "gzip"], ["nope"]],
    ids=lambda a: " ".join(a) or "no-args",
)
def test_usage_errors_exit_2(oxbow, args):
    oxbow.fails(*args, code=2)


def test_selfcheck(oxbow):
    out = oxbow.ok("selfcheck").stdout.decode()
    assert "ipc stream zstd" in out and "ipc file lz4" in out and out.strip().endswith("ms")
