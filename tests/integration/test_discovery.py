"""GetFlightInfo, GetSchema and ListFlights."""

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import assert_tables_equal, descriptor
from oxbowtest.type_samples import LOG_ONLY, make_batches, wide_schema, wide_values


@pytest.mark.parametrize("buckets", [1, 3, 8])
def test_flight_info_endpoints_read_everything(server, buckets):
    schema = wide_schema()
    server.create_table("ns.t", schema, buckets=buckets, properties=LOG_ONLY)
    batches = make_batches(schema, 5, 20, wide_values())
    for b in batches:  # five streams: round-robin spreads them
        server.put("ns.t", [b])
    info = server.client.get_flight_info(descriptor("ns.t"))
    assert info.schema == schema
    assert len(info.endpoints) == buckets
    assert info.total_records == 100
    assert info.descriptor.path == [b"ns", b"t"]
    buckets_seen = set()
    tables = []
    for ep in info.endpoints:
        ticket = json.loads(ep.ticket.ticket)
        assert ticket["table"] == "ns.t"
        buckets_seen.add(ticket["bucket"])
        tables.append(server.client.do_get(ep.ticket).read_all())
    assert buckets_seen == set(range(buckets))
    assert_tables_equal(pa.concat_tables(tables).sort_by("id"), pa.Table.from_batches(batches))


def test_flight_info_ticket_ends_at_the_current_end(server):
    """An endpoint's ticket reads up to the end at GetFlightInfo time, not later writes."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("ns.t", schema)
    server.put("ns.t", [pa.record_batch([pa.array(range(10), pa.int64())], schema=schema)])
    info = server.client.get_flight_info(descriptor("ns.t"))
    server.put("ns.t", [pa.record_batch([pa.array(range(10, 20), pa.int64())], schema=schema)])
    assert server.client.do_get(info.endpoints[0].ticket).read_all().num_rows == 10
    assert server.client.get_flight_info(descriptor("ns.t")).total_records == 20


def test_flight_info_of_an_empty_table(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    server.create_table("ns.t", schema, buckets=2)
    info = server.client.get_flight_info(descriptor("ns.t"))
    assert info.total_records == 0
    assert len(info.endpoints) == 2
    for ep in info.endpoints:
        table = server.client.do_get(ep.ticket).read_all()
        assert table.num_rows == 0 and table.schema == schema


def test_single_element_path_descriptor(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("ns.t", schema)
    one = fl.FlightDescriptor.for_path("ns.t")
    assert server.client.get_flight_info(one).schema == schema
    assert server.client.get_schema(one).schema == schema
    writer, acks = server.client.do_put(one, schema)
    writer.write_batch(pa.record_batch([pa.array([7], pa.int64())], schema=schema))
    assert json.loads(acks.read().to_pybytes())["offsets"][0]["rows"] == 1
    writer.close()
    assert server.read_all("ns.t").column("id").to_pylist() == [7]


def test_get_schema(server):
    server.create_table("ns.t", wide_schema(), properties=LOG_ONLY)
    assert server.client.get_schema(descriptor("ns.t")).schema == wide_schema()


def test_list_flights(server):
    assert list(server.client.list_flights()) == []
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("a.one", schema, buckets=2)
    server.create_table("b.two", wide_schema(), properties=LOG_ONLY)
    server.put("a.one", [pa.record_batch([pa.array(range(5), pa.int64())], schema=schema)])
    infos = {tuple(p.decode() for p in i.descriptor.path): i for i in server.client.list_flights()}
    assert set(infos) == {("a", "one"), ("b", "two")}
    assert infos["a", "one"].schema == schema
    assert infos["b", "two"].schema == wide_schema()
    assert infos["a", "one"].total_records == 5
    assert len(infos["a", "one"].endpoints) == 2
    # A dropped table leaves the listing.
    server.action("drop_table", {"table": "a.one"})
    assert [tuple(p.decode() for p in i.descriptor.path)
            for i in server.client.list_flights()] == [("b", "two")]
