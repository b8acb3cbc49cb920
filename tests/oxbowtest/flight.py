"""Flight helpers for any oxbowd client: descriptors, actions, DoPut/DoGet, schemas as the
server spells them, table comparison and the expected error of a call."""

from __future__ import annotations

import contextlib
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest


def descriptor(table: str) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_path(*table.split(".", 1))


def action(client: fl.FlightClient, name: str, body=None):
    raw = body if isinstance(body, bytes) else json.dumps(body or {}).encode()
    results = client.do_action(fl.Action(name, raw))
    return json.loads(b"".join(r.body.to_pybytes() for r in results))


def put_one(client: fl.FlightClient, descriptor: fl.FlightDescriptor, batch: pa.RecordBatch) -> None:
    """One batch put while the server may be killed: a missing ack raises ConnectionError, and a
    stream the server dropped closes quietly."""
    writer, acks = client.do_put(descriptor, batch.schema)
    try:
        writer.write_batch(batch)
        if acks.read() is None:
            raise ConnectionError("no ack")
        writer.done_writing()
    finally:
        try:
            writer.close()
        except pa.ArrowException:
            pass


def schema_json(schema: pa.Schema) -> dict:
    fields = []
    for f in schema:
        entry = {"name": f.name, "type": str(f.type), "nullable": f.nullable}
        if f.metadata:
            entry["metadata"] = {k.decode(): v.decode() for k, v in f.metadata.items()}
        fields.append(entry)
    return {"fields": fields}


def put(client: fl.FlightClient, table: str, batches, schema: pa.Schema | None = None) -> list[dict]:
    batches = list(batches)
    schema = schema or batches[0].schema
    writer, acks = client.do_put(descriptor(table), schema)
    results = []
    try:
        for batch in batches:
            writer.write_batch(batch)
            reply = acks.read()
            assert reply is not None, f"DoPut on {table}: the stream ended without an ack"
            results.append(json.loads(reply.to_pybytes()))
        writer.done_writing()
    finally:
        writer.close()
    return results


# pyarrow's Flight client hands out buffers at whatever address gRPC left them (any Flight
# server, pyarrow's own too); compute kernels then warn about alignment. Reads that feed
# pyarrow.compute ask for 64-byte aligned copies.
ALIGNED = fl.FlightCallOptions(
    read_options=pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte))


def get(client: fl.FlightClient, ticket: dict,
        options: fl.FlightCallOptions | None = None) -> tuple[pa.Table, list[dict]]:
    reader = client.do_get(fl.Ticket(json.dumps(ticket).encode()), options=options)
    batches, metas = [], []
    schema = reader.schema
    for chunk in reader:
        batches.append(chunk.data)
        metas.append(json.loads(chunk.app_metadata.to_pybytes()))
    return pa.Table.from_batches(batches, schema=schema), metas


def read_ticket(client: fl.FlightClient, **ticket) -> pa.Table:
    """DoGet of the ticket made of the fields that are not None."""
    fields = {name: value for name, value in ticket.items() if value is not None}
    return client.do_get(fl.Ticket(json.dumps(fields).encode())).read_all()


def assert_tables_equal(actual: pa.Table, expected: pa.Table) -> None:
    """Schema (names, types, nullability) and every value equal; NaN equals NaN."""
    assert actual.schema.remove_metadata() == expected.schema.remove_metadata(), (
        f"schema differs:\n{actual.schema}\nexpected:\n{expected.schema}")
    assert actual.num_rows == expected.num_rows, (
        f"{actual.num_rows} rows, expected {expected.num_rows}")
    for name in expected.column_names:
        got = actual.column(name).combine_chunks()
        want = expected.column(name).combine_chunks()
        if pa.types.is_floating(want.type):
            got_nan, want_nan = pc.is_nan(got), pc.is_nan(want)
            assert got_nan.equals(want_nan), f"column {name}: NaN positions differ"
            got = pc.if_else(got_nan, pa.scalar(0, got.type), got)
            want = pc.if_else(want_nan, pa.scalar(0, want.type), want)
        if not got.equals(want):
            diffs = [i for i in range(len(want)) if not got[i].equals(want[i])][:5]
            raise AssertionError(
                f"column {name} differs at rows {diffs}: "
                f"got {[got[i] for i in diffs]}, expected {[want[i] for i in diffs]}")


# How pyarrow spells each gRPC status code in the exception message.
_CODE_PHRASES = {
    "INVALID_ARGUMENT": "invalid argument error",
    "NOT_FOUND": "not found error",
    "ALREADY_EXISTS": "already exists error",
    "OUT_OF_RANGE": "out-of-range error",
    "UNIMPLEMENTED": "unimplemented error",
    "RESOURCE_EXHAUSTED": "resource exhausted",
    "INTERNAL": "internal error",
    "UNAUTHENTICATED": "unauthenticated",
    "PERMISSION_DENIED": "unauthorized error",
}


@contextlib.contextmanager
def expect_error(code: str, *needles: str):
    """Asserts the block raises a Flight error with gRPC `code` whose message contains `needles`."""
    with pytest.raises(pa.ArrowException) as excinfo:
        yield excinfo
    message = str(excinfo.value)
    assert _CODE_PHRASES[code] in message, f"expected {code}, got: {message}"
    for needle in needles:
        assert needle in message, f"error message does not mention {needle!r}: {message}"
