"""Input the server must refuse up front, and error messages that stay small.

- Error messages echo user-supplied names and values truncated (api.md "Errors"), so a huge
  name gets its real error code, not RESOURCE_EXHAUSTED from the client's metadata limit.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowd_harness import descriptor, expect_error, get, put

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


def assert_bounded(excinfo) -> None:
    message = str(excinfo.value)
    assert len(message) < MAX_ERROR_CHARS, f"{len(message)} characters: {message[:300]}..."
    assert HUGE not in message


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
