"""Bad input is refused with a message naming the problem, and leaves nothing half-written."""

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import assert_tables_equal, descriptor, expect_error, put

TABLE = pa.schema([pa.field("id", pa.int64(), nullable=False),
                   pa.field("name", pa.string()),
                   pa.field("amount", pa.decimal128(10, 2))])


def rows(schema, n, first=0):
    arrays = []
    for f in schema:
        if pa.types.is_integer(f.type):
            arrays.append(pa.array(range(first, first + n), f.type))
        elif pa.types.is_decimal(f.type):
            arrays.append(pa.array([None] * n, f.type))
        else:
            arrays.append(pa.array([f"r{i}" for i in range(n)], f.type))
    return pa.record_batch(arrays, schema=schema)


@pytest.fixture
def table(server):
    server.create_table("ns.t", TABLE, buckets=2)
    return server


def offsets(server):
    return [o["next_offset"] for o in server.describe("ns.t")["bucket_offsets"]]


MISMATCHES = {
    "wrong-type": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                              pa.field("name", pa.binary()),
                              pa.field("amount", pa.decimal128(10, 2))]), "name"),
    "wrong-decimal-scale": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                                       pa.field("name", pa.string()),
                                       pa.field("amount", pa.decimal128(10, 3))]), "amount"),
    "missing-field": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                                 pa.field("name", pa.string())]), "amount"),
    "extra-field": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                               pa.field("name", pa.string()),
                               pa.field("amount", pa.decimal128(10, 2)),
                               pa.field("extra", pa.int8())]), "extra"),
    "wrong-name": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                              pa.field("nom", pa.string()),
                              pa.field("amount", pa.decimal128(10, 2))]), "nom"),
    "wrong-order": (pa.schema([pa.field("id", pa.int64(), nullable=False),
                               pa.field("amount", pa.decimal128(10, 2)),
                               pa.field("name", pa.string())]), "amount"),
}

# pyarrow's default: every field nullable, also where the table's is not.
NULLABLE_CLIENT = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                             pa.field("amount", pa.decimal128(10, 2))])


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_schema_mismatch_is_invalid_argument(table, case):
    schema, field = MISMATCHES[case]
    with expect_error("INVALID_ARGUMENT", f"'{field}'"):
        put(table.client, "ns.t", [rows(schema, 5)])
    assert offsets(table) == [0, 0], "a refused stream wrote something"
    assert table.read_all("ns.t").num_rows == 0
    # The table still takes good data afterwards.
    put(table.client, "ns.t", [rows(TABLE, 3)])
    assert table.read_all("ns.t").num_rows == 3


def test_narrower_nullability_is_accepted(table):
    """A client may declare a nullable table column non-nullable."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("name", pa.string(), nullable=False),
                        pa.field("amount", pa.decimal128(10, 2))])
    put(table.client, "ns.t", [rows(schema, 4)])
    assert table.read_all("ns.t").num_rows == 4


def test_wider_client_nullability_is_accepted(table):
    """docs/api.md: a client may declare nullable a field the table does not (pyarrow's default)."""
    put(table.client, "ns.t", [rows(NULLABLE_CLIENT, 4)])
    got = table.read_all("ns.t")
    assert got.num_rows == 4
    assert got.schema == TABLE, "reads return the table's schema, not the writer's"


@pytest.mark.parametrize("client_schema", [TABLE, NULLABLE_CLIENT],
                         ids=["declared-not-null", "declared-nullable"])
def test_null_in_non_nullable_field_writes_nothing_of_that_batch(table, client_schema):
    good = rows(client_schema, 10)
    bad = pa.record_batch([pa.array([100, None, 102], pa.int64()),
                           pa.array(["a", "b", "c"]),
                           pa.array([None] * 3, pa.decimal128(10, 2))], schema=client_schema)
    writer, acks = table.client.do_put(descriptor("ns.t"), client_schema)
    writer.write_batch(good)
    first_ack = json.loads(acks.read().to_pybytes())
    with expect_error("INVALID_ARGUMENT", "'id'"):
        writer.write_batch(bad)
        acks.read()
        writer.done_writing()
        writer.close()
    # The acknowledged batch stays; nothing of the bad one is visible.
    assert sum(offsets(table)) == 10
    got = table.read_all("ns.t")
    assert_tables_equal(got.sort_by("id"), pa.Table.from_batches([good.cast(TABLE)]))
    assert first_ack["offsets"][0]["rows"] == 10


@pytest.mark.parametrize("bucket_key", [[], ["name"]], ids=["no-key", "keyed"])
def test_null_in_non_nullable_field_of_a_later_row(server, bucket_key):
    """Even when the null sits after many valid rows (and the batch would split by key)."""
    server.create_table("ns.t", TABLE, buckets=3, bucket_key=bucket_key)
    ids = list(range(500)) + [None]
    bad = pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"n{i}" for i in range(501)]),
                           pa.array([None] * 501, pa.decimal128(10, 2))],
                          schema=NULLABLE_CLIENT)
    with expect_error("INVALID_ARGUMENT", "'id'"):
        put(server.client, "ns.t", [bad])
    assert server.read_all("ns.t").num_rows == 0


def test_unknown_table_do_put(server):
    with expect_error("NOT_FOUND", "table 'ns.nope' does not exist"):
        put(server.client, "ns.nope", [rows(TABLE, 1)])


def test_unknown_table_do_get(server):
    with expect_error("NOT_FOUND", "table 'ns.nope' does not exist"):
        server.get({"table": "ns.nope"})


def test_unknown_table_get_flight_info_and_schema(server):
    with expect_error("NOT_FOUND", "table 'ns.nope' does not exist"):
        server.client.get_flight_info(descriptor("ns.nope"))
    with expect_error("NOT_FOUND", "table 'ns.nope' does not exist"):
        server.client.get_schema(descriptor("ns.nope"))


@pytest.mark.parametrize("path", [["a", "b", "c"], [], ["bad name", "t"]], ids=str)
def test_bad_descriptor_path(server, path):
    with pytest.raises(pa.ArrowException) as excinfo:
        server.client.get_flight_info(fl.FlightDescriptor.for_path(*path))
    assert "invalid argument" in str(excinfo.value) or "not found" in str(excinfo.value)


def test_command_descriptor_is_refused(server):
    with pytest.raises(pa.ArrowException):
        server.client.get_flight_info(fl.FlightDescriptor.for_command(b"ns.t"))


BAD_TICKETS = {
    "not-json": (b"{{", "JSON"),
    "json-array": (b"[1]", "JSON object"),
    "empty": (b"", ""),
    "no-table": (b'{"bucket": 0}', "table"),
    "table-not-string": (b'{"table": 5}', "table"),
    "bucket-string": (b'{"table": "ns.t", "bucket": "x"}', "bucket"),
    "bucket-negative": (b'{"table": "ns.t", "bucket": -1}', "bucket"),
    "from-word": (b'{"table": "ns.t", "from": "middle"}', "from"),
    "from-negative": (b'{"table": "ns.t", "from": -5}', "from"),
    "from-float": (b'{"table": "ns.t", "from": 1.5}', "from"),
    "to-string": (b'{"table": "ns.t", "to": "end"}', "to"),
    "columns-not-list": (b'{"table": "ns.t", "columns": "id"}', "columns"),
    "columns-not-strings": (b'{"table": "ns.t", "columns": [1]}', "columns"),
    "follow-not-bool": (b'{"table": "ns.t", "follow": "yes"}', "follow"),
    "union-follow-not-bool": (b'{"table": "ns.t", "union": true, "follow": 1}', "follow"),
    "filter-on-log-read": (b'{"table": "ns.t", "filter": []}',
                           '"filter" applies to union reads'),
    "filter-not-list": (b'{"table": "ns.t", "union": true, "filter": {"column": "id"}}',
                        '"filter" must be a list'),
    "filter-entry-keys": (b'{"table": "ns.t", "union": true, "filter": [{"column": "id"}]}',
                          'entry 0 must be {"column"'),
    "filter-bad-op": (b'{"table": "ns.t", "union": true, "filter": '
                      b'[{"column": "id", "op": "like", "value": 1}]}', 'unknown op "like"'),
    "filter-value-list": (b'{"table": "ns.t", "union": true, "filter": '
                          b'[{"column": "id", "op": "<", "value": [1]}]}',
                          '"value" must be a number'),
    "filter-unknown-column": (b'{"table": "ns.t", "union": true, "filter": '
                              b'[{"column": "nope", "op": "<", "value": 1}]}',
                              "filter column 'nope' is not a column of table 'ns.t'"),
    "filter-wrong-value-type": (b'{"table": "ns.t", "union": true, "filter": '
                                b'[{"column": "id", "op": "==", "value": "7"}]}',
                                "column 'id' of type int64 needs an integer value"),
}


@pytest.mark.parametrize("case", list(BAD_TICKETS))
def test_malformed_ticket_is_invalid_argument(table, case):
    raw, needle = BAD_TICKETS[case]
    with expect_error("INVALID_ARGUMENT", needle):
        table.client.do_get(fl.Ticket(raw)).read_all()


def test_ticket_with_invalid_table_name(table):
    with pytest.raises(pa.ArrowException, match="'no dots'") as excinfo:
        table.get({"table": "no dots"})
    assert "invalid argument" in str(excinfo.value) or "not found" in str(excinfo.value)


def test_to_before_from_reads_nothing_or_fails(table):
    put(table.client, "ns.t", [rows(TABLE, 10)])
    bucket = next(b for b, n in enumerate(offsets(table)) if n)
    try:
        got, metas = table.get({"table": "ns.t", "bucket": bucket, "from": 5, "to": 2})
    except pa.ArrowException as e:
        assert "to" in str(e)
    else:
        assert got.num_rows == 0 and metas == []


@pytest.mark.parametrize("bucket", [2, 3, 1024])
def test_ticket_for_missing_bucket(table, bucket):
    with pytest.raises(pa.ArrowException) as excinfo:
        table.get({"table": "ns.t", "bucket": bucket})
    message = str(excinfo.value)
    assert f"bucket {bucket}" in message and "2 buckets" in message, message


def test_ticket_bucket_beyond_int32(table):
    with expect_error("INVALID_ARGUMENT", "bucket"):
        table.get({"table": "ns.t", "bucket": 2**40})


def test_garbage_ipc_on_do_put_does_not_hurt_the_server(table):
    """A client that sends a batch whose schema does not match its stream schema."""
    other = pa.schema([pa.field("x", pa.int8())])
    writer, _ = table.client.do_put(descriptor("ns.t"), TABLE)
    with pytest.raises((pa.ArrowException, ValueError)):
        writer.write_batch(pa.record_batch([pa.array([1], pa.int8())], schema=other))
        writer.close()
    # The server still works.
    put(table.client, "ns.t", [rows(TABLE, 2)])
    assert table.read_all("ns.t").num_rows == 2


@pytest.mark.parametrize("array", [
    pa.array(["a"]).dictionary_encode(),
    pa.array(["a"], pa.large_string()),
    pa.array(["a"], pa.string_view()),
], ids=["dictionary", "large_string", "string_view"])
def test_unsupported_client_type_names_the_field(table, array):
    """A client type Oxbow cannot store: refused, naming the field; nothing written."""
    b = pa.record_batch([pa.array([1], pa.int64()), array, pa.array([None], pa.decimal128(10, 2))],
                        names=["id", "name", "amount"])
    with pytest.raises(pa.ArrowException, match="'name'"):
        put(table.client, "ns.t", [b])
    assert table.read_all("ns.t").num_rows == 0


def test_type_mismatch_with_unsupported_client_type_is_invalid_argument(table):
    b = pa.record_batch([pa.array([1], pa.int64()), pa.array(["a"], pa.large_string()),
                         pa.array([None], pa.decimal128(10, 2))], names=["id", "name", "amount"])
    with expect_error("INVALID_ARGUMENT", "'name'"):
        put(table.client, "ns.t", [b])
