"""Authentication and per-table permissions over pyarrow.flight: users made with `oxbow user`,
the Flight handshake with basic auth issuing a bearer token, and a grant checked on every call."""

from __future__ import annotations

import json
import time
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.auth import oxbow, users_dir
from oxbowtest.flight import expect_error, schema_json
from oxbowtest.server import refused_start

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
BATCH = pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=SCHEMA)


def login(server, name) -> fl.FlightCallOptions:
    client = server.new_client()
    header = client.authenticate_basic_token(name, f"pw-{name}-123")
    return fl.FlightCallOptions(headers=[header])


def put(server, table, options):
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path(*table.split(".")), SCHEMA,
                                        options=options)
    writer.write_batch(BATCH)
    acks.read()
    writer.close()


def read(server, table, options):
    ticket = fl.Ticket(json.dumps({"table": table}).encode())
    return server.client.do_get(ticket, options=options).read_all()


def act(server, name, body, options):
    results = server.client.do_action(fl.Action(name, json.dumps(body).encode()), options=options)
    return json.loads(b"".join(r.body.to_pybytes() for r in results))


@pytest.fixture
def secured(make_server, tmp_path):
    data = users_dir(tmp_path / "secured", {"root": "*=admin", "writer": "shop.*=write",
                                            "reader": "shop.orders=read"})
    return make_server(data_dir=data, extra_args=("--auth",))


def test_grants_are_checked_on_every_call(secured):
    root, writer, reader = (login(secured, n) for n in ("root", "writer", "reader"))
    for t in ("shop.orders", "ops.audit"):
        act(secured, "create_table", {"table": t, "schema": schema_json(SCHEMA)}, root)
    put(secured, "shop.orders", writer)
    assert read(secured, "shop.orders", reader).num_rows == 3
    assert read(secured, "shop.orders", writer).num_rows == 3
    with expect_error("PERMISSION_DENIED", "'reader'", "write", "'shop.orders'"):
        put(secured, "shop.orders", reader)
    with expect_error("PERMISSION_DENIED", "'writer'", "read", "'ops.audit'"):
        read(secured, "ops.audit", writer)
    with expect_error("PERMISSION_DENIED", "admin"):
        act(secured, "drop_table", {"table": "shop.orders"}, writer)
    with expect_error("PERMISSION_DENIED", "admin"):
        act(secured, "create_table", {"table": "shop.new", "schema": schema_json(SCHEMA)}, writer)
    # Listings show only what the caller may read.
    assert [t["table"] for t in act(secured, "list_tables", {}, reader)["tables"]] == ["shop.orders"]
    flights = list(secured.client.list_flights(options=reader))
    assert [f.descriptor.path for f in flights] == [[b"shop", b"orders"]]
    with expect_error("PERMISSION_DENIED"):
        secured.client.get_flight_info(fl.FlightDescriptor.for_path("ops", "audit"), options=reader)
    act(secured, "drop_table", {"table": "ops.audit"}, root)


def test_calls_without_a_valid_token_are_refused(secured):
    with expect_error("UNAUTHENTICATED", "requires authentication"):
        list(secured.client.list_actions())
    with expect_error("UNAUTHENTICATED", "requires authentication"):
        read(secured, "shop.orders", fl.FlightCallOptions())
    forged = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer 00ff")])
    with expect_error("UNAUTHENTICATED", "unknown or expired"):
        read(secured, "shop.orders", forged)
    with pytest.raises(fl.FlightUnauthenticatedError):
        secured.new_client().authenticate_basic_token("root", "wrong password")
    with pytest.raises(fl.FlightUnauthenticatedError):
        secured.new_client().authenticate_basic_token("nobody", "pw-nobody-123")


def test_removing_a_user_ends_their_session(secured):
    root = login(secured, "root")
    reader = login(secured, "reader")
    act(secured, "create_table", {"table": "shop.orders", "schema": schema_json(SCHEMA)}, root)
    assert read(secured, "shop.orders", reader).num_rows == 0
    done = oxbow("user", "remove", "--data-dir", str(secured.data_dir), "reader")
    assert done.returncode == 0, done.stderr
    with expect_error("UNAUTHENTICATED", "'reader'", "removed"):
        read(secured, "shop.orders", reader)
    listed = oxbow("user", "list", "--data-dir", str(secured.data_dir))
    assert listed.stdout.split("\n")[:2] == ["root *=admin", "writer shop.*=write"]
    assert "pw-" not in (secured.data_dir / "users.json").read_text()


def test_cli_refuses_bad_users(tmp_path):
    short = oxbow("user", "add", "--data-dir", str(tmp_path), "x", "--password-stdin", stdin="short\n")
    assert short.returncode != 0 and "at least 8" in short.stderr
    bad_grant = oxbow("user", "add", "--data-dir", str(tmp_path), "x", "--password-stdin",
                      "--grant", "shop.*=owner", stdin="long enough\n")
    assert bad_grant.returncode != 0 and "'owner'" in bad_grant.stderr
    no_password = oxbow("user", "add", "--data-dir", str(tmp_path), "x")
    assert no_password.returncode != 0 and "OXBOW_PASSWORD" in no_password.stderr
    from_env = oxbow("user", "add", "--data-dir", str(tmp_path), "x", env={"OXBOW_PASSWORD": "long enough"})
    assert from_env.returncode == 0, from_env.stderr
    missing = oxbow("user", "remove", "--data-dir", str(tmp_path), "nobody")
    assert missing.returncode != 0 and "'nobody'" in missing.stderr


def test_server_refuses_unsafe_starts(oxbowd_bin, tmp_path):
    assert "without authentication" in refused_start(oxbowd_bin, tmp_path / "d", listen="0.0.0.0:0")
    assert "at least one user" in refused_start(oxbowd_bin, tmp_path / "d", "--auth")


# --- every call x every grant level --------------------------------------------------------

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
PK_BATCH = pa.record_batch([pa.array([1, 2], pa.int64()), pa.array(["a", "b"])], schema=PK_SCHEMA)
KEYS = pa.schema([PK_SCHEMA.field("id")])
LEVELS = ("none", "read", "write", "admin")  # the grant each user has on the m.* tables


def cmd(table, op, **extra):
    return fl.FlightDescriptor.for_command(json.dumps({"table": table, "op": op, **extra}))


def write_to(client, descriptor, schema, batch, options):
    writer, acks = client.do_put(descriptor, schema, options=options)
    writer.write_batch(batch)
    acks.read()
    writer.done_writing()
    writer.close()


def get_ticket(client, ticket, options):
    return client.do_get(fl.Ticket(json.dumps(ticket).encode()), options=options).read_all()


def exchange_lookup(client, options):
    writer, reader = client.do_exchange(cmd("m.pk", "lookup"), options=options)
    writer.begin(KEYS)
    writer.write_batch(pa.record_batch([pa.array([1], pa.int64())], schema=KEYS))
    reader.read_chunk()
    writer.done_writing()
    writer.close()


def table_calls(server, root):
    """(call, the access it needs, run(client, options)) for every Flight call naming a table."""
    def reset(name, exists):
        """Makes table `name` exist or not, as root."""
        existing = [t["table"] for t in act(server, "list_tables", {}, root)["tables"]]
        if name in existing and not exists:
            act(server, "drop_table", {"table": name}, root)
        if name not in existing and exists:
            act(server, "create_table", {"table": name, "schema": schema_json(SCHEMA)}, root)

    def create(client, options):
        reset("m.new", False)
        results = client.do_action(fl.Action("create_table", json.dumps(
            {"table": "m.new", "schema": schema_json(SCHEMA)}).encode()), options=options)
        list(results)

    def drop(client, options):
        reset("m.victim", True)
        list(client.do_action(fl.Action("drop_table", json.dumps({"table": "m.victim"}).encode()),
                              options=options))

    def alter(client, options):
        list(client.do_action(fl.Action("alter_table", json.dumps({"table": "m.log", "changes": [
            {"op": "set_properties", "properties": {"owner": "ops"}}]}).encode()), options=options))

    def describe(client, options):
        list(client.do_action(fl.Action("describe_table", json.dumps({"table": "m.log"}).encode()),
                              options=options))

    return [
        ("GetFlightInfo", "read", lambda cl, o: cl.get_flight_info(fl.FlightDescriptor.for_path("m", "log"), options=o)),
        ("GetSchema", "read", lambda cl, o: cl.get_schema(fl.FlightDescriptor.for_path("m", "log"), options=o)),
        ("DoGet log", "read", lambda cl, o: get_ticket(cl, {"table": "m.log"}, o)),
        ("DoGet changelog", "read", lambda cl, o: get_ticket(cl, {"table": "m.pk"}, o)),
        ("DoGet snapshot", "read", lambda cl, o: get_ticket(cl, {"table": "m.pk", "snapshot": True}, o)),
        ("DoGet lookup", "read", lambda cl, o: get_ticket(cl, {"table": "m.pk", "lookup": {"id": [1]}}, o)),
        ("DoExchange lookup", "read", exchange_lookup),
        ("describe_table", "read", describe),
        ("DoPut append", "write", lambda cl, o: write_to(cl, fl.FlightDescriptor.for_path("m", "log"), SCHEMA, BATCH, o)),
        ("DoPut upsert", "write", lambda cl, o: write_to(cl, cmd("m.pk", "upsert"), PK_SCHEMA, PK_BATCH, o)),
        ("DoPut delete", "write", lambda cl, o: write_to(cl, cmd("m.pk", "delete"), KEYS, pa.record_batch([pa.array([2], pa.int64())], schema=KEYS), o)),
        ("create_table", "admin", create),
        ("drop_table", "admin", drop),
        ("alter_table", "admin", alter),
    ]


@pytest.fixture
def graded(make_server, tmp_path):
    data = users_dir(tmp_path / "graded", {"root": "*=admin", "none": "other.*=admin",
                                           **{level: f"m.*={level}" for level in LEVELS[1:]}})
    server = make_server(data_dir=data, extra_args=("--auth", "--log-level", "debug"))
    root = login(server, "root")
    act(server, "create_table", {"table": "m.log", "schema": schema_json(SCHEMA)}, root)
    act(server, "create_table", {"table": "m.pk", "schema": schema_json(PK_SCHEMA), "primary_key": ["id"]}, root)
    write_to(server.client, cmd("m.pk", "upsert"), PK_SCHEMA, PK_BATCH, root)
    return server, root


def test_every_call_needs_its_grant(graded):
    """The permission table of docs/security.md, asserted: each call by each grant level."""
    server, root = graded
    calls = table_calls(server, root)
    users = {level: login(server, level) for level in LEVELS}
    rank = {level: i for i, level in enumerate(LEVELS)}
    outcome, expected = {}, {}
    for name, needs, run in calls:
        for level in LEVELS:
            expected[(name, level)] = "ok" if rank[level] >= rank[needs] else "denied"
            try:
                run(server.client, users[level])
                outcome[(name, level)] = "ok"
            except (pa.ArrowException, OSError) as e:  # GetSchema raises a plain OSError
                if "unauthorized error" in str(e):  # PERMISSION_DENIED
                    assert f"'{level}'" in str(e) and needs in str(e), str(e)
                    outcome[(name, level)] = "denied"
                else:  # anything else is a bug in the test or the server
                    outcome[(name, level)] = f"error: {e}"
        # No token at all: refused before anything else.
        with pytest.raises((pa.ArrowException, OSError), match="unauthenticated"):
            run(server.client, fl.FlightCallOptions())
    assert outcome == expected
    for leftover in ("m.new", "m.victim"):
        if leftover in [t["table"] for t in act(server, "list_tables", {}, root)["tables"]]:
            act(server, "drop_table", {"table": leftover}, root)
    # Listings never fail: they show the tables the caller may read.
    for level in LEVELS:
        listed = sorted(t["table"] for t in act(server, "list_tables", {}, users[level])["tables"])
        flights = sorted(".".join(p.decode() for p in f.descriptor.path)
                         for f in server.client.list_flights(options=users[level]))
        want = [] if level == "none" else ["m.log", "m.pk"]
        assert listed == want and flights == want, (level, listed, flights)
        assert len(list(server.client.list_actions(options=users[level]))) >= 4
    for listing in (lambda o: act(server, "list_tables", {}, o), lambda o: list(server.client.list_flights(options=o)),
                    lambda o: list(server.client.list_actions(options=o))):
        with expect_error("UNAUTHENTICATED"):
            listing(fl.FlightCallOptions())


def test_secrets_stay_out_of_logs_describe_and_metrics(graded):
    server, root = graded
    header = server.new_client().authenticate_basic_token("write", "pw-write-123")
    token = header[1].decode().split(" ", 1)[1]
    with pytest.raises(fl.FlightUnauthenticatedError):
        server.new_client().authenticate_basic_token("write", "not-the-password")
    described = json.dumps(act(server, "describe_table", {"table": "m.log"}, root))
    with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
        page = response.read().decode()
    users = json.loads((server.data_dir / "users.json").read_text())["users"]
    secrets = [token, "pw-write-123", "not-the-password", "pw-root-123"] + [u["hash"] for u in users]
    log = server.log_path.read_text()
    assert "serving Arrow Flight" in log
    for text, where in ((log, "the log"), (described, "describe_table"), (page, "/metrics")):
        for secret in secrets:
            assert secret not in text, f"a secret appears in {where}"


def test_expired_and_forged_tokens(make_server, tmp_path):
    data = users_dir(tmp_path / "short", {"root": "*=admin"})
    server = make_server(data_dir=data, extra_args=("--auth", "--auth-token-lifetime-s", "1"))
    root = login(server, "root")
    assert act(server, "list_tables", {}, root) == {"tables": []}
    time.sleep(1.5)
    with expect_error("UNAUTHENTICATED", "unknown or expired"):
        act(server, "list_tables", {}, root)
    for forged in (b"Bearer " + b"0" * 64, b"Bearer ", b"Basic cm9vdDpwdy1yb290LTEyMw==", b"Token x"):
        with expect_error("UNAUTHENTICATED"):
            act(server, "list_tables", {}, fl.FlightCallOptions(headers=[(b"authorization", forged)]))
    assert act(server, "list_tables", {}, login(server, "root")) == {"tables": []}


def login_errors(server) -> dict:
    """oxbow_request_errors_total of the handshake, by code."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
        page = response.read().decode()
    return {s.labels["code"]: s.value for f in text_string_to_metric_families(page) for s in f.samples
            if s.name == "oxbow_request_errors_total" and s.labels.get("operation") == "handshake"}


def test_repeated_wrong_passwords_are_locked_out(secured):
    before = login_errors(secured)
    for _ in range(5):
        with pytest.raises(fl.FlightUnauthenticatedError):
            secured.new_client().authenticate_basic_token("reader", "wrong-password")
    # Locked: the right password is refused too, without a password check, for 30 s.
    with pytest.raises(pa.ArrowException) as locked:
        secured.new_client().authenticate_basic_token("reader", "pw-reader-123")
    assert "too many failed logins" in str(locked.value)
    after = login_errors(secured)
    assert after.get("Unauthenticated", 0) - before.get("Unauthenticated", 0) == 5
    assert after.get("ResourceExhausted", 0) - before.get("ResourceExhausted", 0) == 1
    # Another user is not locked out.
    assert login(secured, "writer") is not None
