"""DoPut then DoGet: every type comes back value for value, nulls included; projection."""

import datetime
import decimal

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowd_harness import assert_tables_equal, descriptor, expect_error

D = decimal.Decimal

# name -> (type, values). Each list holds a None and the type's extremes where it has them.
TYPES = {
    "bool": (pa.bool_(), [True, False, None]),
    "int8": (pa.int8(), [-128, 127, 0, -1, None]),
    "int16": (pa.int16(), [-(2**15), 2**15 - 1, 0, None]),
    "int32": (pa.int32(), [-(2**31), 2**31 - 1, 0, None]),
    "int64": (pa.int64(), [-(2**63), 2**63 - 1, 0, None]),
    "uint8": (pa.uint8(), [0, 255, 1, None]),
    "uint16": (pa.uint16(), [0, 2**16 - 1, None]),
    "uint32": (pa.uint32(), [0, 2**32 - 1, None]),
    "uint64": (pa.uint64(), [0, 2**64 - 1, 2**63, None]),
    "float": (pa.float32(), [float("nan"), float("inf"), float("-inf"), -0.0, 1.5,
                             3.4028234663852886e38, 1e-45, None]),
    "double": (pa.float64(), [float("nan"), float("inf"), float("-inf"), -0.0, 2.5,
                              1.7976931348623157e308, 5e-324, None]),
    "string": (pa.string(), ["", "héllo", "日本語 🚀", "x" * 1000, "a\x00b", None]),
    "binary": (pa.binary(), [b"", b"\x00\xff\x80", b"y" * 777, None]),
    "date32": (pa.date32(), [datetime.date(1970, 1, 1), datetime.date(1, 1, 1),
                             datetime.date(9999, 12, 31), datetime.date(1969, 12, 31), None]),
    **{f"timestamp[{unit}]": (pa.timestamp(unit), [0, -1, 1_700_000_000_123, 2**62, None])
       for unit in ["s", "ms", "us", "ns"]},
    **{f"timestamp[{unit}, tz=UTC]": (pa.timestamp(unit, tz="UTC"), [0, -(2**40), 2**50, None])
       for unit in ["s", "ms", "us", "ns"]},
    "timestamp[ns, tz=America/New_York]": (pa.timestamp("ns", tz="America/New_York"),
                                           [1, 2**62, None]),
    "decimal128(10, 2)": (pa.decimal128(10, 2), [D("-12345678.90"), D("0.01"), D("0.00"),
                                                 D("99999999.99"), None]),
    "decimal128(38, 0)": (pa.decimal128(38, 0), [D("9" * 38), D("-" + "9" * 38), D(0), D(-1),
                                                 None]),
    "decimal128(38, 10)": (pa.decimal128(38, 10), [D("1234567890123456789012345678.0123456789"),
                                                   D("-0.0000000001"), None]),
    "fixed_size_binary[4]": (pa.binary(4), [b"abcd", b"\x00\x00\x00\x00", b"\xff" * 4, None]),
    "fixed_size_binary[1]": (pa.binary(1), [b"z", b"\x00", None]),
}


def column(typ, values, rows, shift=0):
    return pa.array([values[(i + shift) % len(values)] for i in range(rows)], type=typ)


def make_batches(schema, num_batches, rows_per_batch, values_by_field, first_id=0):
    """Batches whose non-key columns cycle through each type's values (shifted per batch)."""
    batches, next_id = [], first_id
    for b in range(num_batches):
        arrays = [pa.array(range(next_id, next_id + rows_per_batch), pa.int64())]
        arrays += [column(f.type, values_by_field[f.name], rows_per_batch, shift=b)
                   for f in list(schema)[1:]]
        batches.append(pa.record_batch(arrays, schema=schema))
        next_id += rows_per_batch
    return batches


def read_sorted(server, table, key="id"):
    """All buckets through GetFlightInfo's endpoints, concatenated and sorted by `key`."""
    return server.read_all(table).sort_by(key)


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("nullable", [True, False], ids=["nullable", "not_null"])
def test_roundtrip_type(server, name, nullable):
    typ, values = TYPES[name]
    if not nullable:
        values = [v for v in values if v is not None]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", typ, nullable=nullable)])
    server.create_table("ns.t", schema, buckets=2)
    batches = make_batches(schema, 3, 2 * len(values) + 1, {"v": values})
    acks = server.put("ns.t", batches)
    assert [sum(e["rows"] for e in a["offsets"]) for a in acks] == [b.num_rows for b in batches]
    expected = pa.Table.from_batches(batches)
    assert_tables_equal(read_sorted(server, "ns.t"), expected)


def wide_schema():
    fields = [pa.field("id", pa.int64(), nullable=False)]
    fields += [pa.field(f"c_{i}", typ) for i, (typ, _) in enumerate(TYPES.values())]
    return pa.schema(fields)


def wide_values():
    return {f"c_{i}": values for i, (_, values) in enumerate(TYPES.values())}


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_roundtrip_all_types_in_one_table(server, compression):
    schema = wide_schema()
    server.create_table("ns.wide", schema, buckets=3)
    batches = make_batches(schema, 6, 40, wide_values())
    options = fl.FlightCallOptions(
        write_options=pa.ipc.IpcWriteOptions(compression=compression))
    # Three streams: without a bucket key each lands on a bucket of its own.
    for part in (batches[0:2], batches[2:4], batches[4:6]):
        writer, acks = server.client.do_put(descriptor("ns.wide"), schema, options=options)
        for batch in part:
            writer.write_batch(batch)
            acks.read()
        writer.done_writing()
        writer.close()
    assert_tables_equal(read_sorted(server, "ns.wide"), pa.Table.from_batches(batches))


def test_roundtrip_sliced_batches(server):
    """Batches that are slices of bigger arrays (non-zero offsets, shared buffers) arrive intact."""
    schema = wide_schema()
    server.create_table("ns.t", schema)
    big = make_batches(schema, 1, 200, wide_values())[0]
    parts = [big.slice(0, 7), big.slice(7, 64), big.slice(71, 1), big.slice(72, 128)]
    server.put("ns.t", parts)
    assert_tables_equal(read_sorted(server, "ns.t"), pa.Table.from_batches([big]))


def test_roundtrip_batch_boundaries_and_order(server):
    """One bucket: the log returns the batches in write order, each message one batch."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    server.create_table("ns.t", schema)
    sizes = [1, 10, 3, 1000, 2]
    batches, next_id = [], 0
    for n in sizes:
        batches.append(pa.record_batch([pa.array(range(next_id, next_id + n), pa.int64()),
                                        pa.array([str(i) for i in range(n)])], schema=schema))
        next_id += n
    server.put("ns.t", batches)
    table, metas = server.get({"table": "ns.t", "bucket": 0})
    assert [m["next_offset"] - m["base_offset"] for m in metas] == sizes
    assert_tables_equal(table, pa.Table.from_batches(batches))


def test_roundtrip_field_metadata_is_ignored_on_put(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={"a": "b"})])
    server.create_table("ns.t", pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    server.put("ns.t", [pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=schema)])
    assert server.read_all("ns.t").column("id").to_pylist() == [1, 2, 3]


PROJECTIONS = {
    "one": ["c_3"],
    "key-only": ["id"],
    "reordered": ["c_12", "id", "c_0"],
    "strings-and-decimals": ["c_11", "c_12", "c_26", "c_27"],
    "reversed-all": None,  # filled in below: every column, last to first
}


@pytest.mark.parametrize("projection", list(PROJECTIONS))
def test_projection_equals_pyarrow_select(server, projection):
    schema = wide_schema()
    columns = PROJECTIONS[projection] or list(reversed(schema.names))
    server.create_table("ns.t", schema, buckets=2)
    batches = make_batches(schema, 4, 25, wide_values())
    server.put("ns.t", batches[:2])
    server.put("ns.t", batches[2:])
    expected = pa.Table.from_batches(batches).select(columns)
    tables = []
    for bucket in range(2):
        table, _ = server.get({"table": "ns.t", "bucket": bucket, "columns": columns})
        assert table.schema == expected.schema
        tables.append(table)
    got = pa.concat_tables(tables)
    key = "id" if "id" in columns else None
    if key is None:  # no key to sort by: compare with the unprojected read, in the same order
        full = pa.concat_tables(server.get({"table": "ns.t", "bucket": b})[0] for b in range(2))
        assert_tables_equal(got, full.select(columns))
    else:
        assert_tables_equal(got.sort_by(key), expected.sort_by(key))


def test_projection_via_flight_info_ticket_shape(server):
    """A projection combined with an offset range keeps both."""
    schema = wide_schema()
    server.create_table("ns.t", schema)
    batches = make_batches(schema, 5, 10, wide_values())
    server.put("ns.t", batches)
    table, metas = server.get({"table": "ns.t", "from": 20, "to": 40, "columns": ["c_13", "id"]})
    assert [m["base_offset"] for m in metas] == [20, 30]
    expected = pa.Table.from_batches(batches[2:4]).select(["c_13", "id"])
    assert_tables_equal(table, expected)


def test_projection_unknown_column_names_it(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("a", pa.string())])
    server.create_table("ns.t", schema)
    with expect_error("INVALID_ARGUMENT", "no_such_col"):
        server.get({"table": "ns.t", "columns": ["id", "no_such_col"]})
