"""Authentication and per-table permissions over pyarrow.flight: users made with `oxbow user`,
the Flight handshake with basic auth issuing a bearer token, and a grant checked on every call."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowd_harness import expect_error, oxbowd_binary, schema_json

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
BATCH = pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=SCHEMA)


def oxbow(*args, stdin: str | None = None, env: dict | None = None):
    cli = pathlib.Path(oxbowd_binary()).with_name("oxbow")
    return subprocess.run([str(cli), *args], input=stdin, capture_output=True, text=True,
                          timeout=30, env={**os.environ, **(env or {})})


def add_user(data_dir, name, *grants):
    done = oxbow("user", "add", "--data-dir", str(data_dir), name, "--password-stdin",
                 *[a for g in grants for a in ("--grant", g)], stdin=f"pw-{name}-123\n")
    assert done.returncode == 0, done.stderr


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
    data = tmp_path / "secured"
    data.mkdir()
    add_user(data, "root", "*=admin")
    add_user(data, "writer", "shop.*=write")
    add_user(data, "reader", "shop.orders=read")
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
    def run(*args):
        return subprocess.run([str(oxbowd_bin), "--data-dir", str(tmp_path / "d"),
                               "--metrics-listen", "", "--kafka-listen", "", "--catalog-listen", "", *args],
                              capture_output=True, text=True, timeout=20)
    open_to_all = run("--listen", "0.0.0.0:0")
    assert open_to_all.returncode != 0
    assert "without authentication" in open_to_all.stdout + open_to_all.stderr
    nobody = run("--listen", "127.0.0.1:0", "--auth")
    assert nobody.returncode != 0 and "at least one user" in nobody.stdout + nobody.stderr
