"""The Iceberg REST catalog of oxbowd, read by pyiceberg's REST client (load_catalog(type="rest"))
and by plain HTTP: list, load and scan equal what was written; the spec's error bodies; refused
writes; the bearer token."""

from __future__ import annotations

import http.client
import json
import re

import pytest
import requests
from pyiceberg.exceptions import (NoSuchNamespaceError, NoSuchTableError, RESTError,
                                  UnauthorizedError)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from oxbowtest.lake import wait_describe, wait_lake
from oxbowtest.server import refused_start
from oxbowtest.rest_data import SCHEMA, batch, rest_catalog, user_columns, written


def test_pyiceberg_lists_loads_and_scans(shop):
    catalog = rest_catalog(shop)
    assert catalog.list_namespaces() == [("shop",), ("zoo",)]
    assert catalog.list_tables("shop") == [("shop", "orders"), ("shop", "returns")]
    assert catalog.list_tables("zoo") == []  # lake.enabled false: not an Iceberg table
    assert catalog.load_namespace_properties("shop") == {}
    assert catalog.namespace_exists("zoo") and not catalog.namespace_exists("nope")
    assert catalog.table_exists("shop.orders") and not catalog.table_exists("shop.nope")

    orders = catalog.load_table("shop.orders")
    assert orders.metadata_location == shop.describe("shop.orders")["lake"]["metadata_location"]
    assert [f.name for f in orders.schema().fields][:4] == SCHEMA.names
    scanned = orders.scan().to_arrow()
    assert user_columns(scanned).equals(written(batch(0, 100), batch(100, 50))), scanned
    # Projection and a filter, planned by pyiceberg from the metadata Oxbow serves.
    some = orders.scan(row_filter="id >= 140", selected_fields=("id", "price")).to_arrow()
    assert some.sort_by("id").to_pydict() == {"id": list(range(140, 150)),
                                              "price": [i * 1.25 for i in range(140, 150)]}
    assert user_columns(catalog.load_table("shop.returns").scan().to_arrow()).equals(
        written(batch(1000, 5)))


def test_a_reload_sees_rows_tiered_since(shop):
    catalog = rest_catalog(shop)
    before = catalog.load_table("shop.returns")
    shop.put("shop.returns", [batch(2000, 7)])
    wait_lake(shop, "shop.returns")
    after = catalog.load_table("shop.returns")
    assert after.metadata_location != before.metadata_location
    assert user_columns(after.scan().to_arrow()).equals(written(batch(1000, 5), batch(2000, 7)))


def test_unknown_names_are_spec_404s(shop):
    catalog = rest_catalog(shop)
    with pytest.raises(NoSuchTableError, match="'shop.nope' does not exist"):
        catalog.load_table("shop.nope")
    with pytest.raises(NoSuchTableError, match="lake.enabled is false"):
        catalog.load_table("zoo.animals")
    with pytest.raises(NoSuchTableError, match="primary-key table goes to the lake only with lake.enabled true"):
        catalog.load_table("shop.carts")
    with pytest.raises(NoSuchNamespaceError, match="'nope' does not exist"):
        catalog.list_tables("nope")
    base = f"http://127.0.0.1:{shop.catalog_port}/v1"
    for path, kind in (("/namespaces/nope", "NoSuchNamespaceException"),
                       ("/namespaces/nope/tables/orders", "NoSuchNamespaceException"),
                       ("/namespaces/shop/tables/nope", "NoSuchTableException")):
        reply = requests.get(base + path, timeout=10)
        assert reply.status_code == 404, path
        assert reply.headers["Content-Type"] == "application/json"
        error = reply.json()["error"]
        assert error["code"] == 404 and error["type"] == kind, (path, error)
        assert error["message"], path
    assert requests.head(base + "/namespaces/shop/tables/nope", timeout=10).status_code == 404
    assert requests.head(base + "/namespaces/shop/tables/orders", timeout=10).status_code == 204


def test_changelog_lake_table_is_listed_loaded_and_scanned(shop):
    """A primary-key table with lake.changelog true: its `t$changelog` lake table is served like
    the table's own lake (docs/lake.md, "The changelog lake table")."""
    shop.create_table("shop.baskets", SCHEMA, primary_key=["id"], buckets=1,
                      properties={"lake.enabled": "true", "lake.changelog": "true"})
    shop.put("shop.baskets", [batch(0, 4)])
    shop.put("shop.baskets", [batch(1, 2)])  # updates keys 1 and 2
    ends = [o["next_offset"] for o in shop.describe("shop.baskets")["bucket_offsets"]]
    lake = wait_describe(shop, "shop.baskets",
                         lambda lake: lake.get("changelog", {}).get("tiered_offsets") == ends
                         and lake.get("tiered_offsets") == ends, "both lake tables catching up")
    catalog = rest_catalog(shop)
    assert catalog.list_tables("shop") == [("shop", "baskets"), ("shop", "baskets$changelog"),
                                           ("shop", "orders"), ("shop", "returns")]
    assert catalog.table_exists("shop.baskets$changelog")
    changelog = catalog.load_table("shop.baskets$changelog")
    assert changelog.metadata_location == lake["changelog"]["metadata_location"]
    rows = changelog.scan().to_arrow().sort_by([("__offset", "ascending")])
    assert rows.column("_change_type").to_pylist() == ["+I"] * 4 + ["-U", "+U"] * 2
    assert rows.column("id").to_pylist() == [0, 1, 2, 3, 1, 1, 2, 2]
    # The table's own lake holds each key once.
    own = catalog.load_table("shop.baskets").scan().to_arrow()
    assert sorted(own.column("id").to_pylist()) == [0, 1, 2, 3]
    # Only a primary-key table with lake.changelog true has one.
    for name, says in (("shop.orders$changelog", "'shop.orders' has no changelog lake table"),
                       ("shop.carts$changelog", "'shop.carts' has no changelog lake table"),
                       ("shop.nope$changelog", "'shop.nope$changelog' does not exist")):
        with pytest.raises(NoSuchTableError, match=re.escape(says)):
            catalog.load_table(name)


def raw_request(port: int, method: str, target: str, body: bytes | None = None):
    """The request-target exactly as given (requests would re-quote a bad percent escape)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, target, body=body)
        reply = connection.getresponse()
        return reply.status, reply.getheader("Content-Type"), json.loads(reply.read())
    finally:
        connection.close()


def test_malformed_requests_are_spec_400s(shop):
    for method, path, body, says in (
            ("GET", "/namespaces/%zz/tables", None, "bad percent escape"),
            ("GET", "/namespaces/shop%1F/tables", None, "empty namespace part"),
            ("GET", "/namespaces?pageSize=-1", None, "pageSize must be a positive integer"),
            ("GET", "/no/such/route", None, "no Iceberg REST catalog route"),
            ("POST", "/namespaces/shop/tables", b"{\"name\":", "not valid JSON"),
            ("POST", "/namespaces/shop/tables/orders/metrics", b"7", "must be a JSON object")):
        status, content_type, reply = raw_request(shop.catalog_port, method, "/v1" + path, body)
        assert status == 400, (method, path, reply)
        assert content_type == "application/json"
        error = reply["error"]
        assert error["type"] == "BadRequestException" and error["code"] == 400
        assert says in error["message"], (path, error)


def test_a_uri_too_long_to_read_is_a_414_that_says_so(shop):
    status, content_type, reply = raw_request(shop.catalog_port, "GET",
                                              "/v1/namespaces/" + "x" * 9000)
    assert status == 414 and content_type == "application/json", reply
    assert reply["error"]["message"] == (
        "HTTP 414 for a request whose URI is longer than 8192 bytes"), reply


def test_writes_are_refused_and_change_nothing(shop):
    catalog = rest_catalog(shop)
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    for attempt in (lambda: catalog.create_table("shop.new", schema),
                    lambda: catalog.drop_table("shop.orders"),
                    lambda: catalog.create_namespace("fresh"),
                    lambda: catalog.drop_namespace("zoo"),
                    lambda: catalog.rename_table("shop.orders", "shop.renamed")):
        with pytest.raises(RESTError, match="Oxbow owns the writes of its tables"):
            attempt()
    reply = requests.delete(f"http://127.0.0.1:{shop.catalog_port}/v1/namespaces/shop/tables/"
                            "orders", timeout=10)
    assert reply.status_code == 406
    assert reply.json()["error"]["type"] == "UnsupportedOperationException"
    assert "drop table 'shop.orders' refused" in reply.json()["error"]["message"]
    assert catalog.list_tables("shop") == [("shop", "orders"), ("shop", "returns")]
    assert user_columns(catalog.load_table("shop.orders").scan().to_arrow()).equals(
        written(batch(0, 100), batch(100, 50)))


def test_bearer_token(make_lake_server):
    server = make_lake_server("--catalog-token", "s3cret")
    server.create_table("shop.orders", SCHEMA)
    server.put("shop.orders", [batch(0, 10)])
    wait_lake(server, "shop.orders")
    with pytest.raises(UnauthorizedError, match="bearer token"):
        rest_catalog(server)
    with pytest.raises(UnauthorizedError):
        rest_catalog(server, token="wrong")
    catalog = rest_catalog(server, token="s3cret")
    assert user_columns(catalog.load_table("shop.orders").scan().to_arrow()).equals(
        written(batch(0, 10)))
    reply = requests.get(f"http://127.0.0.1:{server.catalog_port}/v1/namespaces", timeout=10)
    assert reply.status_code == 401
    assert reply.json()["error"]["type"] == "NotAuthorizedException"


def test_catalog_listen_on_a_busy_port_fails_to_start(shop, oxbowd_bin, tmp_path):
    other = refused_start(oxbowd_bin, tmp_path / "other", "--warehouse", str(tmp_path / "w"),
                          catalog_listen=f"127.0.0.1:{shop.catalog_port}", timeout=30)
    assert "cannot listen for the REST catalog on" in other, other
