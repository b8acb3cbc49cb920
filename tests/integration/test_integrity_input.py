"""Input the server must refuse up front, and error messages that stay small.

- A table the lake cannot hold is refused at create_table (lake.md "What the lake refuses"),
  unless it stays out of the lake (lake.enabled=false); so is a second/millisecond timestamp
  beyond the lake's microseconds at DoPut.
- `string` values must be valid UTF-8 (api.md "Writing"): a batch with one bad value is refused
  naming the field and row, and nothing of it is written.
- Error messages echo user-supplied names and values truncated (api.md "Errors"), so a huge
  name gets its real error code, not RESOURCE_EXHAUSTED from the client's metadata limit.
"""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import descriptor, expect_error, get, put

HUGE = "x" * 20_000
HUGE_TABLE = "ns." + HUGE
# How an echo of HUGE and HUGE_TABLE ends: their first 256 bytes, then "…(N bytes)".
HUGE_ECHO = "x" * 256 + "\u2026(20000 bytes)"
HUGE_TABLE_ECHO = "\u2026(20003 bytes)"
# pyarrow repeats the server's message in its exception text; either way it stays far below the
# 8-16 KiB at which gRPC clients give up on a response's headers.
MAX_ERROR_CHARS = 5_000

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])


def ids_and_strings(ids, strings) -> pa.RecordBatch:
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array(strings, pa.string())],
                           schema=SCHEMA)


def raw_strings(values: list[bytes | None]) -> pa.Array:
    """A string array made from raw bytes, which pa.array would refuse to build from bad UTF-8."""
    offsets, data, valid = [0], b"", 0
    for i, v in enumerate(values):
        if v is not None:
            data += v
            valid |= 1 << i
        offsets.append(len(data))
    validity = None if None not in values else pa.py_buffer(
        valid.to_bytes((len(values) + 7) // 8, "little"))
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [validity, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
                                  pa.py_buffer(data)])


def next_offset(server, table: str) -> int:
    return server.describe(table)["bucket_offsets"][0]["next_offset"]


def assert_bounded(excinfo) -> None:
    message = str(excinfo.value)
    assert len(message) < MAX_ERROR_CHARS, f"{len(message)} characters: {message[:300]}..."
    assert HUGE not in message


# --- what the lake cannot hold is refused at create_table --------------------------------------

OUT_OF_THE_LAKE = {"lake.enabled": "false"}

# type -> what the message must say (besides the column's name)
UNTIERABLE_TYPES = {
    "decimal128(10, -1)": (pa.decimal128(10, -1), "0 <= scale <= precision"),
    "decimal128(38, -5)": (pa.decimal128(38, -5), "0 <= scale <= precision"),
    "fixed_size_binary[0]": (pa.binary(0), "length must be at least 1"),
    "uint64": (pa.uint64(), "uint64 has no Iceberg type"),
}


def two_columns(typ) -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("c", typ)])


@pytest.mark.parametrize("type_name", list(UNTIERABLE_TYPES))
def test_type_the_lake_cannot_hold_is_refused(server, type_name):
    typ, rule = UNTIERABLE_TYPES[type_name]
    with expect_error("INVALID_ARGUMENT", "cannot go to the lake", "column 'c'", type_name, rule,
                      "lake.enabled=false"):
        server.create_table("ns.t", two_columns(typ))
    with expect_error("NOT_FOUND"):
        server.describe("ns.t")


@pytest.mark.parametrize("type_name", list(UNTIERABLE_TYPES))
def test_type_the_lake_cannot_hold_is_taken_out_of_the_lake(server, type_name):
    typ, _ = UNTIERABLE_TYPES[type_name]
    server.create_table("ns.t", two_columns(typ), properties=OUT_OF_THE_LAKE)
    values = {pa.types.is_decimal(typ): [1_200_000, None], pa.types.is_fixed_size_binary(typ): [b"", None],
              pa.types.is_uint64(typ): [2**64 - 1, None]}[True]
    batch = pa.record_batch([pa.array([1, 2]), pa.array(values, typ)], schema=two_columns(typ))
    put(server.client, "ns.t", [batch])
    assert server.read_all("ns.t").column("c").to_pylist() == batch.column(1).to_pylist()
    assert server.describe("ns.t")["lake"] == {"enabled": False}


def test_decimal_scale_above_precision_is_refused_everywhere(server):
    for properties in ({}, OUT_OF_THE_LAKE):
        with expect_error("INVALID_ARGUMENT", "field 'c'", "decimal128(5, 7)", "scale in"):
            server.action("create_table", {
                "table": "ns.t", "schema": {"fields": [{"name": "c", "type": "decimal128(5, 7)"}]},
                "properties": properties})


def test_system_column_name_is_refused(server):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("__timestamp", pa.int64())])
    with expect_error("INVALID_ARGUMENT", "column '__timestamp'", "lake system column"):
        server.create_table("ns.t", schema)
    server.create_table("ns.t", schema, properties=OUT_OF_THE_LAKE)


LAKE_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                         pa.field("v", pa.float64()), pa.field("ts", pa.timestamp("us"))])


@pytest.mark.parametrize("spec, rule", [
    ("bucket(4, id)", "unknown partition transform 'bucket'"),
    ("bucket[4]", "must be transform(column)"),
    ("day(nope)", "column 'nope' is not in the schema"),
    ("bucket[4](v)", "does not apply to double"),
    ("hour(name)", "does not apply to string"),
    ("day(id)", "does not apply to long"),
    ("truncate[2](v)", "does not apply to double"),
    ("bucket[0](id)", "N and W from 1"),
    ("truncate[0](id)", "N and W from 1"),
    ("bucket[99999999999](id)", "N and W from 1"),
    ("bucket[4]x(id)", "unknown partition transform"),
    ("identity(id), identity(id)", "used twice"),
    ("bogus", "must be transform(column)"),
])
def test_invalid_partition_spec_is_refused(server, spec, rule):
    with expect_error("INVALID_ARGUMENT", f"lake.partition '{spec}'", rule):
        server.create_table("ns.t", LAKE_SCHEMA, properties={"lake.partition": spec})
    with expect_error("NOT_FOUND"):
        server.describe("ns.t")


def test_valid_partition_specs_are_taken(server):
    for i, spec in enumerate(["bucket[4](id), day(ts)", "truncate[3](name), hour(ts)",
                              " identity( name ) ,month(ts)", "identity(__bucket)", ""]):
        server.create_table(f"ns.t{i}", LAKE_SCHEMA, properties={"lake.partition": spec})


@pytest.mark.parametrize("properties, rule", [
    ({"lake.freshness": "bogus"}, "lake.freshness must be a positive duration"),
    ({"lake.freshness": "-1s"}, "lake.freshness must be a positive duration"),
    ({"lake.freshness": "1.5s"}, "lake.freshness must be a positive duration"),
    ({"lake.enabled": "no"}, 'lake.enabled must be "true" or "false"'),
    ({"lake.enabled": "False"}, 'lake.enabled must be "true" or "false"'),
    ({"lake.enable": "false"}, "unknown table property 'lake.enable'"),
])
def test_invalid_lake_property_is_refused(server, properties, rule):
    with expect_error("INVALID_ARGUMENT", rule):
        server.create_table("ns.t", LAKE_SCHEMA, properties=properties)


def test_lake_properties_of_a_table_out_of_the_lake_are_not_its_business(server):
    server.create_table("ns.t", LAKE_SCHEMA,
                        properties={**OUT_OF_THE_LAKE, "lake.partition": "bogus", "owner": "me"})


MAX_SECONDS = (2**63 - 1) // 10**6  # the largest timestamp[s] that fits in microseconds


@pytest.mark.parametrize("unit, value", [("s", MAX_SECONDS + 1), ("s", -MAX_SECONDS - 1),
                                         ("ms", 2**62), ("s", 2**62)])
def test_timestamp_beyond_microseconds_is_refused_for_a_lake_table(server, unit, value):
    typ = pa.timestamp(unit, tz="UTC")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", typ)])
    server.create_table("ns.t", schema)
    good = pa.record_batch([pa.array([0, 1]), pa.array([MAX_SECONDS, -MAX_SECONDS], typ)],
                           schema=schema)
    bad = pa.record_batch([pa.array([2, 3, 4]), pa.array([None, 0, value], typ)], schema=schema)
    with expect_error("INVALID_ARGUMENT", "field 'ts'", "row 2", str(value),
                      "beyond the microseconds the lake stores"):
        put(server.client, "ns.t", [good, bad])
    assert get(server.client, {"table": "ns.t"})[0].column("id").to_pylist() == [0, 1]
    server.create_table("ns.log", schema, properties=OUT_OF_THE_LAKE)
    put(server.client, "ns.log", [good, bad])
    assert server.read_all("ns.log").column("ts").cast(pa.int64()).to_pylist() == [
        MAX_SECONDS, -MAX_SECONDS, None, 0, value]


def test_value_under_a_null_timestamp_is_not_checked(server):
    typ = pa.timestamp("s")
    schema = pa.schema([pa.field("ts", typ)])
    server.create_table("ns.t", schema)
    values = pa.Array.from_buffers(typ, 2, [pa.py_buffer(b"\x02"),
                                            pa.py_buffer(struct.pack("<2q", 2**62, 5))])
    put(server.client, "ns.t", [pa.record_batch([values], schema=schema)])
    assert server.read_all("ns.t").column("ts").cast(pa.int64()).to_pylist() == [None, 5]


# --- UTF-8 in string columns -----------------------------------------------------------------

THREE_STRINGS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("a", pa.string()),
                           pa.field("b", pa.string()), pa.field("c", pa.binary())])


def three_strings(ids, a, b) -> pa.RecordBatch:
    return pa.record_batch([pa.array(ids, pa.int64()), raw_strings(a), raw_strings(b),
                            pa.array([b"\xff\xfe"] * len(ids), pa.binary())], schema=THREE_STRINGS)


ILL_FORMED = {
    "ff fe": b"\xff\xfe",
    "lone continuation": b"\x80",
    "overlong slash": b"\xc0\xaf",
    "overlong 3-byte": b"\xe0\x80\xaf",
    "surrogate": b"\xed\xa0\x80",
    "above U+10FFFF": b"\xf4\x90\x80\x80",
    "truncated euro sign": b"\xe2\x82",
    "truncated emoji": b"\xf0\x9f\x9a",
}


@pytest.mark.parametrize("bad", list(ILL_FORMED.values()), ids=list(ILL_FORMED))
def test_invalid_utf8_is_refused_and_nothing_of_the_batch_is_written(server, bad):
    server.create_table("ns.t", THREE_STRINGS)
    good = three_strings([0, 1], [b"x", b"y"], [b"\xc3\xa9", None])
    assert put(server.client, "ns.t", [good])[0]["offsets"][0]["rows"] == 2
    # Column b (not the first string column), row 2 (not the first row).
    refused = three_strings([2, 3, 4], [b"p", b"q", b"r"], [b"ok", b"fine", b"ab" + bad + b"cd"])
    with expect_error("INVALID_ARGUMENT", "field 'b'", "row 2", "not valid UTF-8"):
        put(server.client, "ns.t", [refused])
    assert next_offset(server, "ns.t") == 2
    table, _ = get(server.client, {"table": "ns.t"})
    assert table.column("id").to_pylist() == [0, 1]
    assert table.column("b").to_pylist() == ["\u00e9", None]


def test_batches_before_the_invalid_one_stay(server):
    server.create_table("ns.t", THREE_STRINGS)
    batches = [three_strings([i], [b"v"], [b"w"]) for i in range(3)]
    batches.insert(2, three_strings([99] * 40, [b"a"] * 39 + [b"\xff"], [b"b"] * 40))
    with expect_error("INVALID_ARGUMENT", "field 'a'", "row 39"):
        put(server.client, "ns.t", batches)
    assert get(server.client, {"table": "ns.t"})[0].column("id").to_pylist() == [0, 1]


def test_invalid_utf8_in_a_keyed_table_writes_no_bucket(server):
    server.create_table("ns.t", THREE_STRINGS, buckets=4, bucket_key=["id"])
    refused = three_strings(list(range(20)), [b"x"] * 20, [b"y"] * 19 + [b"\xc3"])
    with expect_error("INVALID_ARGUMENT", "field 'b'", "row 19"):
        put(server.client, "ns.t", [refused])
    assert [b["next_offset"] for b in server.describe("ns.t")["bucket_offsets"]] == [0] * 4


def test_bytes_under_a_null_are_not_a_value(server):
    """A null slot's bytes carry no value (pyarrow's full validation skips them too)."""
    server.create_table("ns.t", THREE_STRINGS)
    batch = three_strings([0, 1], [b"x", None], [b"y", b"z"])
    batch = pa.record_batch([batch.column(0), pa.Array.from_buffers(
        pa.string(), 2, [pa.py_buffer(b"\x01"), pa.py_buffer(struct.pack("<3i", 0, 1, 3)),
                         pa.py_buffer(b"x\xff\xfe")]), batch.column(2), batch.column(3)],
        schema=THREE_STRINGS)
    batch.validate(full=True)
    put(server.client, "ns.t", [batch])
    assert get(server.client, {"table": "ns.t"})[0].column("a").to_pylist() == ["x", None]


def test_binary_columns_take_any_bytes(server):
    server.create_table("ns.t", THREE_STRINGS)
    put(server.client, "ns.t", [three_strings([0], [b"a"], [b"b"])])
    assert get(server.client, {"table": "ns.t"})[0].column("c").to_pylist() == [b"\xff\xfe"]


VALID_TEXT = ["", "plain ascii", "caf\u00e9", "\u00df\u00e6\u00f8", "\u20ac 12", "\u65e5\u672c\u8a9e",
              "\U0001F680\U0001F600", "\U0001D11E", "\u0080\u07ff\u0800\ud7ff\ue000\uffff",
              "\U00010000\U0010FFFF", "a\x00b", "mixed \u00e9\u20ac\U0001F680 " * 50]


def test_valid_multibyte_utf8_round_trips(server):
    server.create_table("ns.t", SCHEMA, buckets=2, bucket_key=["id"])
    batch = ids_and_strings(list(range(len(VALID_TEXT))), VALID_TEXT)
    put(server.client, "ns.t", [batch])
    table = server.read_all("ns.t").sort_by("id")
    assert table.column("s").to_pylist() == VALID_TEXT
    table.validate(full=True)


# --- bounded error messages -------------------------------------------------------------------


def test_huge_table_name_in_a_ticket_is_not_found(server):
    ticket = fl.Ticket(json.dumps({"table": HUGE_TABLE}).encode())
    with expect_error("NOT_FOUND", HUGE_TABLE_ECHO, "does not exist") as excinfo:
        server.client.do_get(ticket).read_all()
    assert_bounded(excinfo)


@pytest.mark.parametrize("action", ["describe_table", "drop_table"])
def test_huge_table_name_in_an_action_is_not_found(server, action):
    with expect_error("NOT_FOUND", HUGE_TABLE_ECHO) as excinfo:
        server.action(action, {"table": HUGE_TABLE})
    assert_bounded(excinfo)


def test_huge_table_name_in_create_table_is_invalid(server):
    with expect_error("INVALID_ARGUMENT", HUGE_TABLE_ECHO, "1-128") as excinfo:
        server.create_table(HUGE_TABLE, SCHEMA)
    assert_bounded(excinfo)


def test_table_name_parts_are_limited_to_128_bytes(server):
    server.create_table("n" * 128 + "." + "t" * 128, SCHEMA)
    with expect_error("INVALID_ARGUMENT", "1-128"):
        server.create_table("ns." + "t" * 129, SCHEMA)


def test_huge_table_name_in_a_put_descriptor_is_invalid(server):
    with expect_error("INVALID_ARGUMENT", HUGE_TABLE_ECHO) as excinfo:
        writer, _ = server.client.do_put(fl.FlightDescriptor.for_path("ns", HUGE), SCHEMA)
        writer.write_batch(ids_and_strings([1], ["a"]))
        writer.close()
    assert_bounded(excinfo)


@pytest.mark.parametrize("call", ["get_flight_info", "get_schema"])
def test_huge_table_name_in_a_descriptor_is_invalid(server, call):
    with expect_error("INVALID_ARGUMENT", HUGE_TABLE_ECHO) as excinfo:
        getattr(server.client, call)(fl.FlightDescriptor.for_path("ns", HUGE))
    assert_bounded(excinfo)


def test_huge_column_name_in_a_ticket_is_invalid(server):
    server.create_table("ns.t", SCHEMA)
    with expect_error("INVALID_ARGUMENT", "unknown column", HUGE_ECHO) as excinfo:
        get(server.client, {"table": "ns.t", "columns": [HUGE]})
    assert_bounded(excinfo)


def test_huge_type_name_in_create_table_is_invalid(server):
    with expect_error("INVALID_ARGUMENT", "unknown type", HUGE_ECHO) as excinfo:
        server.action("create_table", {"table": "ns.t",
                                       "schema": {"fields": [{"name": "c", "type": HUGE}]}})
    assert_bounded(excinfo)


def test_huge_field_name_in_a_put_schema_is_invalid(server):
    server.create_table("ns.t", SCHEMA)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field(HUGE, pa.string())])
    batch = pa.record_batch([pa.array([1]), pa.array(["a"])], schema=schema)
    with expect_error("INVALID_ARGUMENT", "schema mismatch", HUGE_ECHO) as excinfo:
        put(server.client, "ns.t", [batch])
    assert_bounded(excinfo)
    assert server.describe("ns.t")["bucket_offsets"][0]["next_offset"] == 0


def test_huge_action_name_is_unimplemented(server):
    with expect_error("UNIMPLEMENTED", "unknown action", HUGE_ECHO) as excinfo:
        list(server.client.do_action(fl.Action(HUGE, b"{}")))
    assert_bounded(excinfo)


def test_every_message_is_capped(server):
    """The list of known columns is not quoted name by name; the final cap bounds it."""
    long_names = [c * 5_000 for c in "abcd"]
    schema = pa.schema([pa.field(name, pa.int64()) for name in long_names])
    server.create_table("ns.t", schema)
    with expect_error("INVALID_ARGUMENT", "unknown column 'nope'", "bytes)") as excinfo:
        get(server.client, {"table": "ns.t", "columns": ["nope"]})
    assert len(str(excinfo.value)) < MAX_ERROR_CHARS
