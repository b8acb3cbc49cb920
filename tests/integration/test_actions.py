"""DoAction: create_table, drop_table, list_tables, describe_table, ListActions, unknown actions."""

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import action, expect_error

# Every type name docs/api.md lists -> the pyarrow type it means.
TYPE_NAMES = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float": pa.float32(),
    "float32": pa.float32(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date32[day]": pa.date32(),
    "date32": pa.date32(),
    "timestamp[s]": pa.timestamp("s"),
    "timestamp[ms]": pa.timestamp("ms"),
    "timestamp[us]": pa.timestamp("us"),
    "timestamp[ns]": pa.timestamp("ns"),
    "timestamp[us, tz=UTC]": pa.timestamp("us", tz="UTC"),
    "timestamp[ns, tz=Europe/Paris]": pa.timestamp("ns", tz="Europe/Paris"),
    "timestamp[s, tz=+05:30]": pa.timestamp("s", tz="+05:30"),
    "decimal128(10, 2)": pa.decimal128(10, 2),
    "decimal128(38, 0)": pa.decimal128(38, 0),
    "decimal128(38, 38)": pa.decimal128(38, 38),
    "decimal128(1, 0)": pa.decimal128(1, 0),
    "fixed_size_binary[16]": pa.binary(16),
    "fixed_size_binary[1]": pa.binary(1),
}

# Type names the lake has no type for (docs/lake.md): only a table out of the lake takes them.
LOG_ONLY_TYPE_NAMES = {"uint64", "decimal128(10, -2)", "fixed_size_binary[0]"}
TYPE_NAMES.update({"decimal128(10, -2)": pa.decimal128(10, -2), "fixed_size_binary[0]": pa.binary(0)})

SIMPLE = {"fields": [{"name": "id", "type": "int64", "nullable": False}]}


def descriptor_keys():
    return {"table", "table_id", "schema", "buckets", "bucket_key", "primary_key", "properties",
            "created_ms"}


@pytest.mark.parametrize("type_name", list(TYPE_NAMES))
def test_create_table_every_type(server, type_name):
    properties = {"lake.enabled": "false"} if type_name in LOG_ONLY_TYPE_NAMES else {}
    desc = server.action("create_table", {
        "table": "ns.t", "schema": {"fields": [{"name": "c", "type": type_name}]},
        "properties": properties})
    assert descriptor_keys() <= set(desc)
    assert desc["table"] == "ns.t"
    # The stored type is the one pyarrow means by that name, seen through GetSchema.
    schema = server.client.get_schema(fl.FlightDescriptor.for_path("ns", "t")).schema
    assert schema.field("c").type == TYPE_NAMES[type_name]
    assert schema.field("c").nullable  # nullable is the default
    # The descriptor spells the type the way pyarrow prints it (aliases come back canonical).
    assert desc["schema"]["fields"][0]["type"] == str(TYPE_NAMES[type_name])


def test_create_table_descriptor(server):
    body = {
        "table": "shop.orders",
        "schema": {"fields": [
            {"name": "id", "type": "int64", "nullable": False, "metadata": {"k": "v"}},
            {"name": "ts", "type": "timestamp[us, tz=UTC]"},
            {"name": "amount", "type": "decimal128(10, 2)"}]},
        "buckets": 4,
        "bucket_key": ["id"],
        "properties": {"owner": "team-a", "empty": ""},
    }
    desc = server.action("create_table", body)
    assert desc["table"] == "shop.orders"
    assert desc["buckets"] == 4
    assert desc["bucket_key"] == ["id"]
    assert desc["primary_key"] == []
    assert desc["properties"] == {"owner": "team-a", "empty": ""}
    assert isinstance(desc["table_id"], int)
    assert isinstance(desc["created_ms"], int) and desc["created_ms"] > 1_500_000_000_000
    fields = desc["schema"]["fields"]
    assert [f["name"] for f in fields] == ["id", "ts", "amount"]
    assert [f["nullable"] for f in fields] == [False, True, True]
    assert fields[0].get("metadata") == {"k": "v"}
    schema = server.client.get_schema(fl.FlightDescriptor.for_path("shop", "orders")).schema
    assert schema == pa.schema([pa.field("id", pa.int64(), nullable=False),
                                pa.field("ts", pa.timestamp("us", tz="UTC")),
                                pa.field("amount", pa.decimal128(10, 2))])
    # describe_table returns the same descriptor plus offsets.
    described = server.describe("shop.orders")
    for key in descriptor_keys():
        assert described[key] == desc[key], key


def test_create_table_defaults(server):
    desc = server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    assert desc["buckets"] == 1
    assert desc["bucket_key"] == []
    assert desc["properties"] == {}


def test_create_duplicate_is_already_exists(server):
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    with expect_error("ALREADY_EXISTS", "ns.t"):
        server.action("create_table", {"table": "ns.t", "schema": SIMPLE})


def test_create_if_not_exists_returns_existing(server):
    first = server.action("create_table", {"table": "ns.t", "schema": SIMPLE, "buckets": 3})
    again = server.action("create_table", {"table": "ns.t", "schema": SIMPLE, "buckets": 3,
                                           "if_not_exists": True})
    assert again["table_id"] == first["table_id"]
    assert again["buckets"] == 3
    assert len(server.action("list_tables")["tables"]) == 1


def test_table_ids_are_distinct(server):
    ids = {server.action("create_table", {"table": f"ns.t{i}", "schema": SIMPLE})["table_id"]
           for i in range(5)}
    assert len(ids) == 5


@pytest.mark.parametrize("body, needle", [
    pytest.param(b"{not json", "JSON", id="body-not-json"),
    pytest.param(b"[1, 2]", "", id="body-not-object"),
    pytest.param({"schema": SIMPLE}, "table", id="missing-table"),
    pytest.param({"table": "ns.t"}, "schema", id="missing-schema"),
    pytest.param({"table": "ns.t", "schema": {"fields": "id"}}, "fields", id="fields-not-list"),
    pytest.param({"table": "ns.t", "schema": {"fields": []}}, "field", id="no-fields"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"name": "a", "type": "int99"}]}},
                 "int99", id="unknown-type"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"name": "a",
                                                          "type": "large_list<int32>"}]}},
                 "large_list<int32>", id="unsupported-type"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"name": "a", "type": "decimal128(39, 0)"}]}},
                 "decimal128(39, 0)", id="decimal-precision-too-big"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"name": "a"}]}}, "type",
                 id="field-without-type"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"type": "int32"}]}}, "name",
                 id="field-without-name"),
    pytest.param({"table": "ns.t", "schema": {"fields": [{"name": "a", "type": "int32"},
                                                         {"name": "a", "type": "int64"}]}},
                 "'a'", id="duplicate-field"),
    pytest.param({"table": "bad name!", "schema": SIMPLE}, "bad name!", id="bad-name-chars"),
    pytest.param({"table": "nodot", "schema": SIMPLE}, "nodot", id="bad-name-no-namespace"),
    pytest.param({"table": "a.b.c", "schema": SIMPLE}, "a.b.c", id="bad-name-two-dots"),
    pytest.param({"table": ".t", "schema": SIMPLE}, ".t", id="bad-name-empty-namespace"),
    pytest.param({"table": "ns." + "x" * 129, "schema": SIMPLE}, "ns.x", id="bad-name-too-long"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "buckets": 0}, "buckets", id="buckets-0"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "buckets": 1025}, "buckets",
                 id="buckets-1025"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "buckets": -1}, "buckets",
                 id="buckets-negative"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "buckets": "4"}, "buckets",
                 id="buckets-string"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "bucket_key": ["zz"]}, "zz",
                 id="unknown-bucket-key"),
    pytest.param({"table": "ns.t", "schema": SIMPLE, "properties": {"k": 1}}, "'k'",
                 id="property-not-string"),
])
def test_create_table_rejects(server, body, needle):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with expect_error("INVALID_ARGUMENT", needle):
        server.action("create_table", raw)
    assert server.action("list_tables")["tables"] == []


def test_create_table_name_limits_accepted(server):
    name = "a-b_9." + "x" * 128
    desc = server.action("create_table", {"table": name, "schema": SIMPLE})
    assert desc["table"] == name


def test_drop_table(server):
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    batch = pa.record_batch([pa.array([1, 2], pa.int64())],
                            schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    server.put("ns.t", [batch])
    assert server.action("drop_table", {"table": "ns.t"}) == {"dropped": "ns.t"}
    assert server.action("list_tables")["tables"] == []
    with expect_error("NOT_FOUND", "table 'ns.t' does not exist"):
        server.describe("ns.t")
    # Dropping removes the data: a new table of that name starts empty.
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    assert server.read_all("ns.t").num_rows == 0
    assert server.describe("ns.t")["bucket_offsets"][0]["next_offset"] == 0


def test_drop_unknown_table_is_not_found(server):
    with expect_error("NOT_FOUND", "table 'ns.nope' does not exist"):
        server.action("drop_table", {"table": "ns.nope"})


def test_list_tables(server):
    assert server.action("list_tables") == {"tables": []}
    for name in ["b.two", "a.one", "c.three"]:
        server.action("create_table", {"table": name, "schema": SIMPLE})
    tables = server.action("list_tables")["tables"]
    assert sorted(t["table"] for t in tables) == ["a.one", "b.two", "c.three"]
    for t in tables:
        assert descriptor_keys() <= set(t)


def test_describe_table_offsets_per_bucket(server):
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE, "buckets": 3})
    desc = server.describe("ns.t")
    assert desc["bucket_offsets"] == [
        {"bucket": b, "earliest_offset": 0, "next_offset": 0, "local_segments": 1,
         "local_bytes": 0, "cold": {"segments": 0, "bytes": 0}} for b in range(3)]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    # Without a bucket key each stream sticks to one bucket; count what the acks report.
    expected = [0, 0, 0]
    for n in [5, 7, 11, 13]:
        acks = server.put("ns.t", [pa.record_batch([pa.array(range(n), pa.int64())], schema=schema)])
        for entry in acks[0]["offsets"]:
            expected[entry["bucket"]] += entry["rows"]
    offsets = server.describe("ns.t")["bucket_offsets"]
    assert [o["next_offset"] for o in offsets] == expected
    assert [o["earliest_offset"] for o in offsets] == [0, 0, 0]
    assert sum(expected) == 36


def test_describe_unknown_table(server):
    with expect_error("NOT_FOUND", "table 'x.y' does not exist"):
        server.describe("x.y")


def test_list_actions(server):
    actions = {a.type: a.description for a in server.client.list_actions()}
    assert {"create_table", "drop_table", "list_tables", "describe_table"} <= set(actions)
    for name, description in actions.items():
        assert description, f"action {name} has no description"


def test_unknown_action_is_unimplemented(server):
    with expect_error("UNIMPLEMENTED", "no_such_action"):
        server.action("no_such_action", {})


def test_concurrent_create_of_one_name(server):
    """Eight clients race to create one table: exactly one wins, the rest get ALREADY_EXISTS."""
    import threading

    results, errors = [], []

    def create():
        client = server.new_client()
        try:
            results.append(action(client, "create_table", {"table": "ns.race", "schema": SIMPLE}))
        except pa.ArrowException as e:
            errors.append(str(e))
        finally:
            client.close()

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1, results
    assert len(errors) == 7 and all("already exists" in e for e in errors), errors
    assert len(server.action("list_tables")["tables"]) == 1


def test_drop_table_while_a_writer_streams(server):
    """Dropping a table under an open DoPut stream ends that stream with an error; the server
    carries on, and the name is free again."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    client = server.new_client()
    writer, acks = client.do_put(fl.FlightDescriptor.for_path("ns", "t"), schema)
    writer.write_batch(pa.record_batch([pa.array([1], pa.int64())], schema=schema))
    assert acks.read() is not None
    server.action("drop_table", {"table": "ns.t"})
    with pytest.raises(pa.ArrowException):
        for i in range(100):
            writer.write_batch(pa.record_batch([pa.array([i], pa.int64())], schema=schema))
            if acks.read() is None:
                raise pa.ArrowException("stream ended")
        writer.done_writing()
        writer.close()
    client.close()
    server.action("create_table", {"table": "ns.t", "schema": SIMPLE})
    assert server.read_all("ns.t").num_rows == 0


def test_running_out_of_file_descriptors_is_an_error_not_a_crash(make_server):
    """create_table of 1024 buckets with RLIMIT_NOFILE=256: an error naming the problem, and
    the server keeps serving."""
    server = make_server(max_open_files=256)
    try:
        with pytest.raises(pa.ArrowException) as excinfo:
            server.action("create_table", {"table": "ns.many", "schema": SIMPLE, "buckets": 1024})
        assert "unavailable" not in str(excinfo.value).lower(), str(excinfo.value)
        server.action("create_table", {"table": "ns.small", "schema": SIMPLE})
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        server.put("ns.small", [pa.record_batch([pa.array([1], pa.int64())], schema=schema)])
        assert server.read_all("ns.small").num_rows == 1
    finally:
        code = server.crashed()
        assert code is None, f"oxbowd died with exit code {code}\n{server.log_tail()}"
