"""connect() and the Client: the tables of one Oxbow server or cluster."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

import pyarrow as pa
import pyarrow.flight as fl

from oxbow._connection import Connections
from oxbow._convert import schema_json
from oxbow.table import Table

# PEM bytes, or the path of a PEM file.
Pem = Union[bytes, str, os.PathLike]

# Actions that change nothing: retried on another server when one is unreachable.
_READ_ACTIONS = {"describe_table", "list_tables", "cluster_status"}


def connect(uri: str | Sequence[str] = "grpc://127.0.0.1:8815", user: str | None = None,
            password: str | None = None, *, tls_root_certs: Pem | None = None,
            cert_chain: Pem | None = None, private_key: Pem | None = None,
            timeout: float | None = None, retry_for: float = 30.0,
            align_buffers: bool = False) -> Client:
    """A client of the oxbowd at `uri` (`grpc://host:port`, or `grpc+tls://host:port` for
    TLS), or of a cluster given by a list of its servers' URIs.

    `user` and `password` log in with the Flight handshake (basic auth answered with a bearer
    token, on a server run with --auth); a wrong password raises Unauthenticated here.
    `tls_root_certs` is the CA that signed the server's certificate, `cert_chain` and
    `private_key` the client's own for mutual TLS (PEM bytes or file paths). `timeout` (s)
    bounds each call that is not a stream (default: none). `retry_for` (s) is how long a call
    keeps retrying while a server is unreachable or a bucket has no leader. `align_buffers`
    copies each read buffer that gRPC left misaligned for its type (pyarrow's Acero warns
    about those); by default reads are zero-copy, as raw pyarrow's.
    """
    servers = [uri] if isinstance(uri, str) else list(uri)
    if not servers:
        raise ValueError("connect() needs at least one server URI")
    if (user is None) != (password is None):
        raise ValueError("a login needs both user and password")
    tls = {name: _pem(value) for name, value in (("tls_root_certs", tls_root_certs),
                                                  ("cert_chain", cert_chain),
                                                  ("private_key", private_key))
           if value is not None}
    connections = Connections(servers, tls, user, password, timeout, retry_for, align_buffers)
    if user is not None:
        connections.get(servers[0])  # log in now, so a wrong password fails here
    return Client(connections)


def _pem(value: Pem) -> bytes:
    if isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


class Client:
    """The tables of one server or cluster. Made by connect(); a context manager that closes
    its connections."""

    def __init__(self, connections: Connections):
        self._connections = connections

    def table(self, name: str) -> Table:
        """The table `name` ("namespace.table"). Nothing is asked of the server until a
        method of the Table is called (TableNotFound then, if it does not exist)."""
        return Table(name, self._connections, self.action)

    def create_table(self, name: str, schema: pa.Schema, *,
                     primary_key: Sequence[str] | None = None, buckets: int | None = None,
                     bucket_key: Sequence[str] | None = None,
                     properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False) -> Table:
        """Creates the table `name` with `schema` (each field's type as `str()` of its pyarrow
        type, its nullability and metadata; a metadata entry "doc" is the column's doc) and
        returns it. `primary_key` makes a primary-key table; `buckets` (default 1),
        `bucket_key` and `properties` are create_table's (docs/api.md). An existing table
        raises AlreadyExists unless `if_not_exists`."""
        body: dict[str, Any] = {"table": name, "schema": schema_json(schema),
                                "if_not_exists": if_not_exists}
        if primary_key is not None:
            body["primary_key"] = list(primary_key)
        if buckets is not None:
            body["buckets"] = buckets
        if bucket_key is not None:
            body["bucket_key"] = list(bucket_key)
        if properties is not None:
            body["properties"] = dict(properties)
        self.action("create_table", body)
        return self.table(name)

    def list_tables(self) -> list[str]:
        """The names of the tables (under --auth: those the user may read)."""
        return [t["table"] for t in self.action("list_tables")["tables"]]

    def drop_table(self, name: str) -> None:
        """Drops the table `name` and its data, in the log and in the lake."""
        self.action("drop_table", {"table": name})

    def action(self, name: str, body: Mapping[str, Any] | None = None) -> dict:
        """Runs the Flight action `name` with the JSON `body` and returns its JSON answer
        (docs/api.md "Actions"), e.g. action("cluster_status")."""
        raw = json.dumps(dict(body or {})).encode()

        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> dict:
            results = client.do_action(fl.Action(name, raw), options=options)
            return json.loads(b"".join(r.body.to_pybytes() for r in results))

        return self._connections.call(run, idempotent=name in _READ_ACTIONS)

    def close(self) -> None:
        """Closes every connection."""
        self._connections.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
