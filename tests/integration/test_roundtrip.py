"""DoPut then DoGet: every type comes back value for value, nulls included; projection."""

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import assert_tables_equal, descriptor, expect_error
from oxbowtest.type_samples import LOG_ONLY, TYPES, make_batches, wide_schema, wide_values


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
    server.create_table("ns.t", schema, buckets=2, properties=LOG_ONLY)
    batches = make_batches(schema, 3, 2 * len(values) + 1, {"v": values})
    acks = server.put("ns.t", batches)
    assert [sum(e["rows"] for e in a["offsets"]) for a in acks] == [b.num_rows for b in batches]
    expected = pa.Table.from_batches(batches)
    assert_tables_equal(read_sorted(server, "ns.t"), expected)


def put_compressed(server, table: str, schema: pa.Schema, batches, compression) -> None:
    """One DoPut stream of `batches`, their bodies compressed with `compression` (or not)."""
    options = fl.FlightCallOptions(write_options=pa.ipc.IpcWriteOptions(compression=compression))
    writer, acks = server.client.do_put(descriptor(table), schema, options=options)
    for batch in batches:
        writer.write_batch(batch)
        acks.read()
    writer.done_writing()
    writer.close()


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_roundtrip_all_types_in_one_table(server, compression):
    schema = wide_schema()
    server.create_table("ns.wide", schema, buckets=3, properties=LOG_ONLY)
    batches = make_batches(schema, 6, 40, wide_values())
    # Three streams: without a bucket key each lands on a bucket of its own.
    for part in (batches[0:2], batches[2:4], batches[4:6]):
        put_compressed(server, "ns.wide", schema, part, compression)
    assert_tables_equal(read_sorted(server, "ns.wide"), pa.Table.from_batches(batches))


def test_roundtrip_sliced_batches(server):
    """Batches that are slices of bigger arrays (non-zero offsets, shared buffers) arrive intact."""
    schema = wide_schema()
    server.create_table("ns.t", schema, properties=LOG_ONLY)
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
    server.create_table("ns.t", schema, buckets=2, properties=LOG_ONLY)
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
    server.create_table("ns.t", schema, properties=LOG_ONLY)
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


def test_empty_batch_is_acknowledged_without_offsets(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("ns.t", schema)
    acks = server.put("ns.t", [pa.record_batch([pa.array([], pa.int64())], schema=schema)])
    assert sum(e["rows"] for e in acks[0]["offsets"]) == 0
    assert server.describe("ns.t")["bucket_offsets"][0]["next_offset"] == 0


def test_stream_without_batches(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("ns.t", schema)
    writer, _ = server.client.do_put(descriptor("ns.t"), schema)
    writer.done_writing()
    writer.close()
    assert server.read_all("ns.t").num_rows == 0


def test_pipelined_writes_are_acked_in_order(server):
    """50 batches written before any ack is read: acks come back in batch order."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("ns.t", schema)
    writer, acks = server.client.do_put(descriptor("ns.t"), schema)
    for i in range(50):
        writer.write_batch(pa.record_batch([pa.array(range(i * 3, i * 3 + 3), pa.int64())],
                                           schema=schema))
    replies = [json.loads(acks.read().to_pybytes()) for _ in range(50)]
    writer.done_writing()
    writer.close()
    assert [r["offsets"] for r in replies] == [
        [{"bucket": 0, "base_offset": 3 * i, "rows": 3}] for i in range(50)]
    assert server.read_all("ns.t").column("id").to_pylist() == list(range(150))


def test_batch_larger_than_grpc_default_message_size(server):
    """A ~12 MB batch (gRPC's default limit is 4 MB) goes in and comes back whole."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    server.create_table("ns.t", schema)
    n = 300_000
    big = pa.record_batch([pa.array(range(n), pa.int64()), pa.array([f"{i:030d}" for i in range(n)])],
                          schema=schema)
    assert big.nbytes > 10_000_000
    (ack,) = server.put("ns.t", [big])
    assert ack["offsets"] == [{"bucket": 0, "base_offset": 0, "rows": n}]
    assert_tables_equal(server.read_all("ns.t"), pa.Table.from_batches([big]))


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_projection_of_compressed_batches(server, compression):
    """The server projects compressed bodies (each buffer compressed on its own) as sent."""
    schema = wide_schema()
    server.create_table("ns.t", schema, properties=LOG_ONLY)
    batches = make_batches(schema, 3, 50, wide_values())
    put_compressed(server, "ns.t", schema, batches, compression)
    columns = ["c_13", "c_0", "id", "c_26"]
    table, _ = server.get({"table": "ns.t", "columns": columns})
    assert_tables_equal(table, pa.Table.from_batches(batches).select(columns))
