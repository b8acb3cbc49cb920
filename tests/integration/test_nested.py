"""Nested types (list, struct, map, fixed_size_list) in log tables, against pyarrow: type names,
DoPut then DoGet value for value with nulls at every level, server-side projection, and the
refusals of what is not supported yet (docs/api.md#nested-types)."""

import json
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import assert_tables_equal, descriptor, expect_error, schema_json

LOG_ONLY = {"lake.enabled": "false"}

POINT = pa.struct([("x", pa.float64()), pa.field("tag", pa.string(), nullable=False)])
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("l", pa.list_(pa.int64())),
    pa.field("ll", pa.list_(pa.list_(pa.string()))),
    pa.field("s", pa.struct([("a", pa.int32()), ("b", pa.string()),
                             ("pts", pa.list_(POINT))])),
    pa.field("m", pa.map_(pa.string(), pa.list_(pa.int64()))),
    pa.field("f", pa.list_(pa.int32(), 3)),
    pa.field("d", pa.list_(pa.field("when", pa.timestamp("us", tz="UTC"), nullable=False))),
])


def row_values(i):
    """Row i: cycles through nulls at every level, empty containers and full ones."""
    k = i % 6
    return {
        "id": i,
        "l": [None, [], [i], [i, None, -i], None, list(range(k))][k],
        "ll": [None, [[]], [None], [["a", None], [], None], [[str(i)] * 3], []][k],
        "s": [None,
              {"a": None, "b": None, "pts": None},
              {"a": i, "b": "x" * k, "pts": []},
              {"a": -i, "b": None, "pts": [None, {"x": None, "tag": "t"}]},
              {"a": 7, "b": "é", "pts": [{"x": 1.5, "tag": ""}, {"x": -0.0, "tag": "z"}]},
              {"a": None, "b": "", "pts": None}][k],
        "m": [None, [], [("k", None)], [("a", [1, None]), ("b", [])],
              [("x", [i])], [("p", None), ("q", [2, 3])]][k],
        "f": [None, [1, 2, 3], [None, None, None], [i, None, -i], None, [0, 0, 7]][k],
        "d": [None, [], [0], [1_700_000_000_000_000, 1], None, [5]][k],
    }


def make_batch(start, rows):
    rows_ = [row_values(i) for i in range(start, start + rows)]
    return pa.RecordBatch.from_pylist(rows_, schema=SCHEMA)


def read_one(server, table, **ticket):
    reader = server.client.do_get(
        fl.Ticket(json.dumps({"table": table, "bucket": 0, "from": "earliest", **ticket}).encode()))
    return reader.read_all()


# pyarrow's type strings and the short forms, each with the type pyarrow would make.
TYPE_NAMES = [
    ("list<item: int64>", pa.list_(pa.int64())),
    ("list<int64>", pa.list_(pa.int64())),
    ("list<item: int64 not null>", pa.list_(pa.field("item", pa.int64(), nullable=False))),
    ("list<x: string>", pa.list_(pa.field("x", pa.string()))),
    ("struct<a: int32, b: string>", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("struct<a: int32 not null, b: list<item: double>>",
     pa.struct([pa.field("a", pa.int32(), nullable=False), ("b", pa.list_(pa.float64()))])),
    ("struct<>", pa.struct([])),
    ("map<string, int64>", pa.map_(pa.string(), pa.int64())),
    ("map<int32, struct<a: list<int8>>>",
     pa.map_(pa.int32(), pa.struct([("a", pa.list_(pa.int8()))]))),
    ("fixed_size_list<item: int32>[3]", pa.list_(pa.int32(), 3)),
    ("fixed_size_list<int32>[3]", pa.list_(pa.int32(), 3)),
    ("list<timestamp[us, tz=UTC]>", pa.list_(pa.timestamp("us", tz="UTC"))),
    ("list<list<list<decimal128(10, 2)>>>", pa.list_(pa.list_(pa.list_(pa.decimal128(10, 2))))),
]


@pytest.mark.parametrize("name,typ", TYPE_NAMES, ids=[n for n, _ in TYPE_NAMES])
def test_type_names_parse_and_print_as_pyarrow(server, name, typ):
    server.action("create_table", {"table": "ns.t", "properties": LOG_ONLY, "schema": {
        "fields": [{"name": "v", "type": name}]}})
    described = server.describe("ns.t")["schema"]["fields"][0]["type"]
    assert described == str(typ)
    info = server.client.get_flight_info(descriptor("ns.t"))
    assert info.schema.field("v").type == typ


@pytest.mark.parametrize("bad,needle", [
    ("list<int64", "expected list<item: type>"),
    ("list<>", "unknown type"),
    ("list<item: nope>", "unknown type 'nope'"),
    ("struct<int32>", "needs a name"),
    ("struct<a: int32, a: string>", "two fields named 'a'"),
    ("map<string>", "expected map<key type, value type>"),
    ("fixed_size_list<int32>[-1]", "fixed_size_list<item: type>[size]"),
    ("large_list<int64>", "unknown type"),
    ("list<" * 40 + "int8" + ">" * 40, "deeper than 32 levels"),
])
def test_bad_nested_type_names_are_refused(server, bad, needle):
    with expect_error("INVALID_ARGUMENT", needle):
        server.action("create_table", {"table": "ns.t", "properties": LOG_ONLY, "schema": {
            "fields": [{"name": "v", "type": bad}]}})


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_nested_roundtrip_with_nulls_at_every_level(server, compression):
    server.create_table("ns.n", SCHEMA, properties=LOG_ONLY)
    batches = [make_batch(0, 1), make_batch(1, 17), make_batch(18, 40)]
    options = fl.FlightCallOptions(write_options=pa.ipc.IpcWriteOptions(compression=compression))
    writer, acks = server.client.do_put(descriptor("ns.n"), SCHEMA, options=options)
    for b in batches:
        writer.write_batch(b)
        assert acks.read() is not None
    writer.done_writing()
    writer.close()
    expected = pa.Table.from_batches(batches)
    got = read_one(server, "ns.n")
    assert_tables_equal(got, expected)
    assert got.to_pylist() == expected.to_pylist()


def test_nested_sliced_batches_arrive_intact(server):
    """Slices of bigger arrays: list offsets not starting at 0, struct and fixed_size_list
    children read at the parent's offset."""
    server.create_table("ns.n", SCHEMA, properties=LOG_ONLY)
    big = make_batch(0, 60)
    parts = [big.slice(0, 5), big.slice(5, 1), big.slice(6, 31), big.slice(37, 23)]
    server.put("ns.n", parts)
    assert_tables_equal(read_one(server, "ns.n"), pa.Table.from_batches([big]))


def test_nested_projection_on_the_server(server):
    server.create_table("ns.n", SCHEMA, properties=LOG_ONLY)
    batch = make_batch(0, 30)
    server.put("ns.n", [batch])
    expected = pa.Table.from_batches([batch])
    for columns in (["m"], ["s", "id"], ["f", "ll", "l"], ["d", "d"]):
        got = read_one(server, "ns.n", columns=columns)
        assert got.schema.names == columns
        for i, name in enumerate(columns):
            assert got.column(i).combine_chunks().equals(
                expected.column(name).combine_chunks()), name


def test_nested_survives_a_restart(server):
    server.create_table("ns.n", SCHEMA, properties=LOG_ONLY)
    batch = make_batch(0, 12)
    server.put("ns.n", [batch])
    server.restart()
    assert server.describe("ns.n")["schema"]["fields"][4]["type"] == str(SCHEMA.field("m").type)
    assert_tables_equal(read_one(server, "ns.n"), pa.Table.from_batches([batch]))


def test_list_item_names_do_not_matter(server):
    """As in pyarrow, list<element: int64> is list<item: int64>; reads use the table's names."""
    server.create_table("ns.n", pa.schema([("l", pa.list_(pa.int64()))]), properties=LOG_ONLY)
    theirs = pa.schema([("l", pa.list_(pa.field("element", pa.int64())))])
    batch = pa.RecordBatch.from_pylist([{"l": [1, None]}, {"l": None}], schema=theirs)
    server.put("ns.n", [batch])
    got = read_one(server, "ns.n")
    assert str(got.schema.field("l").type) == "list<item: int64>"
    assert got.to_pylist() == [{"l": [1, None]}, {"l": None}]


def test_nested_type_mismatch_names_the_field(server):
    server.create_table("ns.n", pa.schema([("s", pa.struct([("a", pa.int32())]))]),
                        properties=LOG_ONLY)
    theirs = pa.schema([("s", pa.struct([("a", pa.int64())]))])
    batch = pa.RecordBatch.from_pylist([{"s": {"a": 1}}], schema=theirs)
    with expect_error("INVALID_ARGUMENT", "field 's'", "struct<a: int64>", "struct<a: int32>"):
        server.put("ns.n", [batch])


def test_malformed_nested_batches_are_refused(server):
    """List offsets that decrease, at the top and inside a struct. pyarrow's writer sends them
    (only its full validation would notice); the server refuses them naming the column and
    child, and writes nothing."""
    server.create_table("ns.n", pa.schema([("l", pa.list_(pa.int64())),
                                           ("s", pa.struct([("a", pa.list_(pa.int32()))]))]),
                        properties=LOG_ONLY)
    bad_offsets = pa.py_buffer(pa.array([0, 2, 1], pa.int32()).buffers()[1])
    bad_list = pa.ListArray.from_buffers(pa.list_(pa.int64()), 2, [None, bad_offsets],
                                         children=[pa.array([1, 2], pa.int64())])
    good_struct = pa.array([{"a": [1]}, {"a": []}], pa.struct([("a", pa.list_(pa.int32()))]))
    batch = pa.RecordBatch.from_arrays([bad_list, good_struct], names=["l", "s"])
    with expect_error("INVALID_ARGUMENT", "column 'l'", "offsets decrease"):
        server.put("ns.n", [batch])
    bad_inner = pa.ListArray.from_buffers(pa.list_(pa.int32()), 2, [None, bad_offsets],
                                          children=[pa.array([1, 2], pa.int32())])
    bad_struct = pa.StructArray.from_arrays([bad_inner], names=["a"])
    good_list = pa.array([[1], []], pa.list_(pa.int64()))
    batch = pa.RecordBatch.from_arrays([good_list, bad_struct], names=["l", "s"])
    with expect_error("INVALID_ARGUMENT", "column 's'", "child 'a'", "offsets decrease"):
        server.put("ns.n", [batch])
    assert server.describe("ns.n")["bucket_offsets"][0]["next_offset"] == 0


@pytest.mark.parametrize("primary_key", [None, ["id"]], ids=["log", "primary-key"])
def test_a_null_in_a_not_null_nested_field_is_refused(server, primary_key):
    """pyarrow sends a null in a not-null struct field (its full validation accepts it); Parquet
    and Iceberg cannot hold it, so a lake table would stop tiering at that batch. The put is
    refused naming the field's path and row, and nothing is written; a null inside a null struct
    or list holds no value and is accepted."""
    point = pa.struct([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.list_(point))])
    server.create_table("ns.req", schema, properties={"lake.enabled": "true"},
                        **({"primary_key": primary_key} if primary_key else {}))
    a = pa.array([1, None, 3], pa.int32())
    b = pa.array(["x", "y", None])

    def batch(point_nulls, list_nulls):
        points = pa.StructArray.from_arrays([a, b], fields=list(point), mask=pa.array(point_nulls))
        lists = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), points,
                                         mask=pa.array(list_nulls))
        return pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64()), lists], schema=schema)

    bad = batch([False, False, False], [False, False, False])
    bad.validate(full=True)
    with expect_error("INVALID_ARGUMENT", "field 'p' of table 'ns.req'",
                      "its not-null field 'item.a' holds a null in row 1"):
        server.put("ns.req", [bad])
    assert server.describe("ns.req")["bucket_offsets"][0]["next_offset"] == 0
    server.put("ns.req", [batch([False, True, False], [False, False, False])])
    server.put("ns.req", [batch([False, False, False], [False, True, False])])
    # 6 rows; a primary-key table's changelog: 3 inserts, then 3 updates of 2 records each.
    assert server.describe("ns.req")["bucket_offsets"][0]["next_offset"] == (9 if primary_key else 6)
    deadline = time.monotonic() + 30
    while (lake := server.describe("ns.req")["lake"])["lag_rows"] > 0:
        assert "error" not in lake and time.monotonic() < deadline, lake
        time.sleep(0.1)
    assert "error" not in lake and lake["data_files"] > 0, lake


def test_nested_columns_the_lake_cannot_hold_are_refused(server):
    """Lake tables take lists, structs, maps and fixed-size lists (as Iceberg lists) of the
    children the lake holds (tests/lake/test_lake_conformance.py), but not a child Iceberg has
    no type for."""
    server.create_table("ns.lake", pa.schema([("id", pa.int64()), ("f", pa.list_(pa.int8(), 2))]))
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.uint64())]))])
    with expect_error("INVALID_ARGUMENT", "column 's'", "uint64"):
        server.create_table("ns.lake3", schema)


def test_bad_utf8_inside_a_nested_column_is_refused(server):
    server.create_table("ns.n", pa.schema([("s", pa.struct([("tags", pa.list_(pa.string()))]))]),
                        properties=LOG_ONLY)
    offsets = pa.py_buffer(pa.array([0, 2, 4], pa.int32()).buffers()[1])
    strings = pa.StringArray.from_buffers(2, offsets, pa.py_buffer(b"ok\xff\xfe"))
    tags = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), strings)
    s = pa.StructArray.from_arrays([tags], names=["tags"])
    with expect_error("INVALID_ARGUMENT", "field 's'", "child 'tags'", "not valid UTF-8"):
        server.put("ns.n", [pa.RecordBatch.from_arrays([s], names=["s"])])


# --- the CLI: table create, produce of an Arrow file, consume as JSON Lines / CSV / table -------


def as_json(value, typ):
    """What JSON Lines holds for a pyarrow value (to_pylist form) of `typ` (docs/text-formats.md):
    maps are objects keyed by the key's text, timestamps ISO text with Z."""
    if value is None:
        return None
    if pa.types.is_map(typ):
        return {str(k): as_json(v, typ.item_type) for k, v in value}
    if pa.types.is_list(typ) or pa.types.is_fixed_size_list(typ):
        return [as_json(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return {f.name: as_json(value[f.name], f.type) for f in typ}
    if pa.types.is_timestamp(typ):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def test_cli_creates_produces_and_consumes_nested(oxbow, server, tmp_path):
    addr = ["--server", f"127.0.0.1:{server.port}"]
    oxbow.ok("table", "create", "ns.cli", "--schema",
             "id int64 not null, l list<int64>, s struct<a: int32, b: list<string>>, "
             "m map<string, list<int64>>, f fixed_size_list<int32>[3], "
             "d list<when: timestamp[us, tz=UTC] not null>",
             "--property", "lake.enabled=false", *addr)
    fields = server.describe("ns.cli")["schema"]["fields"]
    assert [f["type"] for f in fields] == [
        "int64", "list<item: int64>", "struct<a: int32, b: list<item: string>>",
        "map<string, list<item: int64>>", "fixed_size_list<item: int32>[3]",
        "list<when: timestamp[us, tz=UTC] not null>"]
    schema = pa.schema([SCHEMA.field(n) if n != "s" else
                        pa.field("s", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))]))
                        for n in ("id", "l", "s", "m", "f", "d")])
    rows = [row_values(i) for i in range(12)]
    for r in rows:
        if r["s"] is not None:
            r["s"] = {"a": r["s"]["a"], "b": None if r["s"]["b"] is None else [r["s"]["b"], None]}
    table = pa.Table.from_pylist(rows, schema=schema)
    path = tmp_path / "rows.arrow"
    with pa.ipc.new_file(path, schema) as w:
        w.write_table(table)
    oxbow.ok("produce", "ns.cli", str(path), *addr)
    assert_tables_equal(read_one(server, "ns.cli"), table)

    got = [json.loads(line) for line in oxbow.ok(
        "consume", "ns.cli", "--format", "jsonl", *addr).stdout.decode().splitlines()]
    expected = [{f.name: as_json(r[f.name], f.type) for f in schema}
                for r in table.to_pylist()]
    assert got == expected
    # CSV and table cells hold the same JSON text.
    csv = oxbow.ok("consume", "ns.cli", "--format", "csv", "--columns", "m", *addr)
    import csv as csv_module
    import io
    cells = [row[0] if row else "" for row in csv_module.reader(io.StringIO(csv.stdout.decode()))]
    cells = cells[1:]
    assert [json.loads(c) if c else None for c in cells] == [e["m"] for e in expected]
    oxbow.ok("consume", "ns.cli", "--columns", "s", *addr)


def plain_json(value):
    """A pyarrow to_pylist value as JSON Lines spell it (docs/text-formats.md): maps as objects."""
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return {k: plain_json(v) for k, v in value}
    if isinstance(value, list):
        return [plain_json(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_json(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_cli_reads_nested_values_from_text(oxbow, server, fmt):
    """JSON Lines and CSV written by Python's json and csv modules (not Oxbow's writer) carry
    nested values with nulls at every level; what DoGet returns equals pyarrow's table."""
    import csv as csv_module
    import io

    addr = ["--server", f"127.0.0.1:{server.port}"]
    table_name = f"ns.text_{fmt}"
    server.create_table(table_name, SCHEMA, properties=LOG_ONLY)
    rows = [row_values(i) for i in range(12)]
    if fmt == "jsonl":
        text = "".join(json.dumps({k: plain_json(v) for k, v in r.items()}) + "\n" for r in rows)
    else:
        out = io.StringIO()
        writer = csv_module.writer(out)
        writer.writerow(SCHEMA.names)
        for r in rows:
            writer.writerow(["" if r[n] is None else r[n] if n == "id" else json.dumps(plain_json(r[n]))
                             for n in SCHEMA.names])
        text = out.getvalue()
    oxbow.ok("produce", table_name, "--format", fmt, *addr, input=text.encode())
    assert_tables_equal(read_one(server, table_name), pa.Table.from_pylist(rows, schema=SCHEMA))


def test_cli_text_refusals_name_the_nested_value(oxbow, server):
    addr = ["--server", f"127.0.0.1:{server.port}"]
    server.create_table("ns.bad_text", SCHEMA, properties=LOG_ONLY)
    for line, words in [
            ('{"id": 1, "f": [1, 2]}', ["column 'f'", "expected 3 items"]),
            ('{"id": 1, "s": {"a": 1, "zz": 2}}', ["column 's'", "field 'zz' is not in"]),
            ('{"id": 1, "s": {"pts": [{"x": 1}]}}', ["field 'pts'", "item 0", "field 'tag'",
                                                    "null in a not-null column"]),
            ('{"id": 1, "l": [1, [2]]}', ["column 'l'", "item 1", "got a JSON object or array"]),
            ('{"id": 1, "l": {"a": 1}}', ["column 'l'", "expected a JSON array"]),
            ('{"id": 1, "l": [1, 2}', ["unexpected '}'"])]:
        err = oxbow.fails("produce", "ns.bad_text", "--format", "jsonl", *addr,
                          input=(line + "\n").encode())
        for w in words:
            assert w in err, (line, err)


def test_a_nested_bucket_key_is_refused(server):
    schema = pa.schema([("id", pa.int64()), ("l", pa.list_(pa.int64()))])
    with expect_error("INVALID_ARGUMENT", "key column 'l'", "a nested column cannot be a key"):
        server.create_table("ns.k", schema, bucket_key=["l"], properties=LOG_ONLY)
