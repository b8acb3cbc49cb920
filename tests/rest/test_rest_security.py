"""The REST catalog under oxbowd --auth and TLS: the users of the Flight handshake, with their
per-table read grants; pyiceberg with a token from the handshake, plain HTTP(S) with basic
credentials; 401s, 403s with the spec's error body, hidden tables, HTTPS with the Flight
endpoint's certificate, and the starts oxbowd refuses."""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError

from oxbowtest.flight import schema_json
from oxbowtest.server import refused_start
from oxbowtest.rest_data import SCHEMA, batch, rest_catalog, user_columns, written
from oxbowtest.auth import add_user, users_dir

PASSWORD = {name: f"pw-{name}-123" for name in ("root", "shopper", "stranger")}


def token_of(server, user) -> str:
    header = server.new_client().authenticate_basic_token(user, PASSWORD[user])
    return header[1].decode().split(" ", 1)[1]


def start(make_server, tmp_path, *extra, client_args=None):
    data = users_dir(tmp_path / "data", {"root": "*=admin", "shopper": "shop.orders=read",
                                         "stranger": "other.*=admin"})
    server = make_server(data_dir=data, client_args=client_args,
                         extra_args=("--auth", "--warehouse", str(tmp_path / "warehouse"),
                                     "--lake-freshness-ms", "100", *extra))
    root = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token_of(server, 'root')}".encode())])
    for name, props in (("shop.orders", {}), ("shop.returns", {}), ("zoo.animals", {})):
        list(server.client.do_action(fl.Action("create_table", json.dumps(
            {"table": name, "schema": schema_json(SCHEMA), "properties": props}).encode()), options=root))
        writer, acks = server.client.do_put(fl.FlightDescriptor.for_path(*name.split(".")), SCHEMA,
                                            options=root)
        writer.write_batch(batch(0, 20))
        acks.read()
        writer.close()
    return server


def wait_tiered(base, tables, **request_args):
    deadline = time.monotonic() + 20
    for table in tables:
        ns, name = table.split(".")
        while requests.head(f"{base}/v1/namespaces/{ns}/tables/{name}", timeout=10,
                            auth=("root", PASSWORD["root"]), **request_args).status_code != 204:
            assert time.monotonic() < deadline, f"{table} never reached the lake"
            time.sleep(0.05)


@pytest.fixture
def secured(make_server, tmp_path):
    server = start(make_server, tmp_path)
    server.base = f"http://127.0.0.1:{server.catalog_port}"
    wait_tiered(server.base, ["shop.orders", "shop.returns", "zoo.animals"])
    return server


def test_pyiceberg_with_a_flight_token_sees_what_the_user_may_read(secured):
    catalog = rest_catalog(secured, token=token_of(secured, "shopper"))
    assert catalog.list_namespaces() == [("shop",)]  # zoo holds nothing shopper may read
    assert catalog.list_tables("shop") == [("shop", "orders")]
    assert user_columns(catalog.load_table("shop.orders").scan().to_arrow()).equals(written(batch(0, 20)))
    with pytest.raises(ForbiddenError, match="'shopper' may not read table 'shop.returns'"):
        catalog.load_table("shop.returns")
    # Refused by name, whether the table exists or not.
    with pytest.raises(ForbiddenError):
        catalog.load_table("shop.nope")
    root = rest_catalog(secured, token=token_of(secured, "root"))
    assert root.list_namespaces() == [("shop",), ("zoo",)]
    assert root.list_tables("shop") == [("shop", "orders"), ("shop", "returns")]
    stranger = rest_catalog(secured, token=token_of(secured, "stranger"))
    assert stranger.list_namespaces() == []


def test_pyiceberg_with_basic_auth(secured):
    catalog = rest_catalog(secured, auth={"type": "basic", "basic": {
        "username": "shopper", "password": PASSWORD["shopper"]}})
    assert catalog.list_tables("shop") == [("shop", "orders")]
    assert user_columns(catalog.load_table("shop.orders").scan().to_arrow()).equals(written(batch(0, 20)))
    with pytest.raises(UnauthorizedError, match="wrong user name or password"):
        rest_catalog(secured, auth={"type": "basic", "basic": {"username": "shopper", "password": "nope-nope"}})


def test_bad_or_missing_credentials_are_401s(secured):
    with pytest.raises(UnauthorizedError):
        rest_catalog(secured)
    with pytest.raises(UnauthorizedError, match="unknown or expired"):
        rest_catalog(secured, token="0" * 64)
    for auth in (None, ("shopper", "wrong-password"), ("nobody", "pw-nobody-123")):
        reply = requests.get(secured.base + "/v1/namespaces", auth=auth, timeout=10)
        assert reply.status_code == 401, auth
        assert reply.json()["error"]["type"] == "NotAuthorizedException"
        assert reply.json()["error"]["code"] == 401


def test_basic_credentials_and_403s_in_the_spec_body(secured):
    shopper = ("shopper", PASSWORD["shopper"])
    reply = requests.get(secured.base + "/v1/namespaces/shop/tables", auth=shopper, timeout=10)
    assert reply.json() == {"identifiers": [{"namespace": ["shop"], "name": "orders"}]}
    assert requests.get(secured.base + "/v1/namespaces/shop/tables/orders", auth=shopper,
                        timeout=10).status_code == 200
    for method in ("GET", "HEAD"):
        reply = requests.request(method, secured.base + "/v1/namespaces/zoo/tables/animals",
                                 auth=shopper, timeout=10)
        assert reply.status_code == 403
        if method == "GET":
            assert reply.json() == {"error": {
                "message": "user 'shopper' may not read table 'zoo.animals'",
                "type": "ForbiddenException", "code": 403}}
    # A namespace without a readable table is hidden like a missing one.
    assert requests.get(secured.base + "/v1/namespaces/zoo", auth=shopper, timeout=10).status_code == 404


def test_repeated_wrong_passwords_lock_out_the_name_on_rest_too(secured):
    for _ in range(5):
        assert requests.get(secured.base + "/v1/config", auth=("shopper", "bad-password"),
                            timeout=10).status_code == 401
    locked = requests.get(secured.base + "/v1/config", auth=("shopper", PASSWORD["shopper"]), timeout=10)
    assert locked.status_code == 401
    assert "too many failed logins" in locked.json()["error"]["message"]
    # The lockout is the name's, on every listener: the Flight handshake refuses it too.
    with pytest.raises(pa.ArrowException, match="too many failed logins"):
        secured.new_client().authenticate_basic_token("shopper", PASSWORD["shopper"])


# --- every call x every grant level ------------------------------------------------------------

LEVELS = ("none", "read", "write", "admin")  # each user's grant on shop.* ("none": other.*)
NS, TABLE = "/v1/namespaces/shop", "/v1/namespaces/shop/tables/orders"
# (call, what it needs, method, path, JSON body): "login" (any user), "read" (a read grant on
# shop.orders; namespace-level calls hide a namespace holding nothing readable, 404), "never"
# (the catalog is read-only: refused to everyone, 406, whatever the grant).
REST_CALLS = [
    ("get config", "login", "GET", "/v1/config", None),
    ("list namespaces", "login", "GET", "/v1/namespaces", None),
    ("load namespace", "read", "GET", NS, None),
    ("namespace exists", "read", "HEAD", NS, None),
    ("list tables", "read", "GET", NS + "/tables", None),
    ("load table", "read", "GET", TABLE, None),
    ("table exists", "read", "HEAD", TABLE, None),
    ("report metrics", "read", "POST", TABLE + "/metrics", {"report-type": "scan-report"}),
    ("create namespace", "never", "POST", "/v1/namespaces", {"namespace": ["x"]}),
    ("set namespace properties", "never", "POST", NS + "/properties", {"updates": {"a": "b"}}),
    ("drop namespace", "never", "DELETE", NS, None),
    ("create table", "never", "POST", NS + "/tables", {"name": "t", "schema": {}}),
    ("register table", "never", "POST", NS + "/register", {"name": "t", "metadata-location": "x"}),
    ("commit table", "never", "POST", TABLE, {"requirements": [], "updates": []}),
    ("drop table", "never", "DELETE", TABLE, None),
    ("rename table", "never", "POST", "/v1/tables/rename", {"source": {}, "destination": {}}),
    ("commit transaction", "never", "POST", "/v1/transactions/commit", {"table-changes": []}),
]


def test_every_rest_call_needs_its_grant(secured):
    """The REST rows of the permission table (docs/security.md), asserted: each call by each
    grant level, with basic credentials and with a handshake token."""
    for level in LEVELS:
        add_user(secured.data_dir, level, "other.*=admin" if level == "none" else f"shop.*={level}")
    rank = {level: i for i, level in enumerate(LEVELS)}

    def outcome(reply) -> str:
        return {200: "ok", 204: "ok", 401: "unauthenticated", 403: "denied", 404: "hidden",
                406: "refused"}.get(reply.status_code, f"status {reply.status_code}")

    def expect(needs, level, method, path) -> str:
        if needs == "never":
            return "refused"
        if needs == "login" or rank[level] >= rank["read"]:
            return "ok"
        return "hidden" if path.startswith(NS) and not path.startswith(NS + "/tables/") else "denied"

    got, expected = {}, {}
    for level in LEVELS:
        credentials = {"basic": {"auth": (level, f"pw-{level}-123")},
                       "token": {"headers": {"Authorization": "Bearer " + secured.new_client().authenticate_basic_token(
                           level, f"pw-{level}-123")[1].decode().split(" ", 1)[1]}}}
        for how, kwargs in credentials.items():
            for name, needs, method, path, body in REST_CALLS:
                reply = requests.request(method, secured.base + path, json=body, timeout=10, **kwargs)
                got[(name, level, how)] = outcome(reply)
                expected[(name, level, how)] = expect(needs, level, method, path)
                if reply.status_code == 403 and method != "HEAD":
                    assert reply.json()["error"]["message"] == \
                        f"user '{level}' may not read table 'shop.orders'", reply.text
    for name, _, method, path, body in REST_CALLS:  # no credentials at all
        got[(name, "anonymous", "-")] = outcome(requests.request(method, secured.base + path, json=body, timeout=10))
        expected[(name, "anonymous", "-")] = "unauthenticated"
    assert got == expected
    # Listings never fail: they show the namespaces and tables the user may read.
    for level in LEVELS:
        listed = requests.get(secured.base + "/v1/namespaces", auth=(level, f"pw-{level}-123"), timeout=10).json()
        assert listed["namespaces"] == ([] if level == "none" else [["shop"]]), (level, listed)


def test_https_with_the_flight_certificate(make_server, tmp_path, pki, monkeypatch):  # noqa: F811
    # requests lets these variables override a session's CA bundle (psf/requests#3829), which
    # is how pyiceberg passes ssl.cabundle on.
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(variable, raising=False)
    server = start(make_server, tmp_path, "--tls-cert", str(pki / "server.pem"),
                   "--tls-key", str(pki / "server.key"),
                   client_args={"tls_root_certs": (pki / "ca.pem").read_bytes()})
    base = f"https://127.0.0.1:{server.catalog_port}"
    ca = str(pki / "ca.pem")
    wait_tiered(base, ["shop.orders"], verify=ca)
    catalog = load_catalog("oxbow", type="rest", uri=base, token=token_of(server, "shopper"),
                           ssl={"cabundle": ca})
    assert catalog.list_tables("shop") == [("shop", "orders")]
    assert user_columns(catalog.load_table("shop.orders").scan().to_arrow()).equals(written(batch(0, 20)))
    # Plain HTTP on the HTTPS port gets no answer; an unknown CA is refused by the client.
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{server.catalog_port}/v1/config", timeout=10)
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(base + "/v1/config", timeout=10)


def test_mutual_tls_on_the_catalog(make_server, tmp_path, pki, rogue):  # noqa: F811
    server = start(make_server, tmp_path, "--tls-cert", str(pki / "server.pem"),
                   "--tls-key", str(pki / "server.key"), "--tls-client-ca", str(pki / "ca.pem"),
                   client_args={"tls_root_certs": (pki / "ca.pem").read_bytes(),
                                "cert_chain": (pki / "client.pem").read_bytes(),
                                "private_key": (pki / "client.key").read_bytes()})
    base = f"https://127.0.0.1:{server.catalog_port}"
    ca = str(pki / "ca.pem")
    with pytest.raises(requests.exceptions.RequestException):
        requests.get(base + "/v1/config", verify=ca, timeout=10)
    reply = requests.get(base + "/v1/config", verify=ca, auth=("root", PASSWORD["root"]),
                         cert=(str(pki / "client.pem"), str(pki / "client.key")), timeout=10)
    assert reply.status_code == 200
    # A certificate from another CA is refused like none.
    with pytest.raises(requests.exceptions.RequestException):
        requests.get(base + "/v1/config", verify=ca, auth=("root", PASSWORD["root"]),
                     cert=(str(rogue / "client.pem"), str(rogue / "client.key")), timeout=10)
    # The same through urllib with an ssl context of its own.
    login = {"Authorization": "Basic " + base64.b64encode(f"root:{PASSWORD['root']}".encode()).decode()}
    context = ssl.create_default_context(cafile=ca)
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        urllib.request.urlopen(urllib.request.Request(base + "/v1/config", headers=login),
                               context=context, timeout=10).read()
    context.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
    with urllib.request.urlopen(urllib.request.Request(base + "/v1/config", headers=login),
                                context=context, timeout=10) as answer:
        assert answer.status == 200 and "endpoints" in json.loads(answer.read())


def test_refused_starts(oxbowd_bin, tmp_path):
    # Only checked, never bound: the refusal comes before any listener starts.
    open_catalog = refused_start(oxbowd_bin, tmp_path / "d", catalog_listen="0.0.0.0:0")
    assert "without authentication" in open_catalog and "REST catalog" in open_catalog
    (tmp_path / "d").mkdir(exist_ok=True)
    add_user(tmp_path / "d", "root", "*=admin")
    both = refused_start(oxbowd_bin, tmp_path / "d", "--auth", "--catalog-token", "x",
                         catalog_listen="127.0.0.1:0")
    assert "exclude each other" in both, both
