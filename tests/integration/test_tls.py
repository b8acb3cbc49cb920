"""TLS on the Flight endpoint with certificates the test makes itself (openssl): pyarrow over
grpc+tls reads and writes, a plaintext client is refused, and mutual TLS refuses a client
without a certificate from the configured CA."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.server import OxbowServer, refused_start


def tls_server(make_server, pki, mutual=False) -> OxbowServer:
    args = ["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")]
    if mutual:
        args += ["--tls-client-ca", str(pki / "ca.pem")]
    client_args = {"tls_root_certs": (pki / "ca.pem").read_bytes()}
    if mutual:
        client_args.update(cert_chain=(pki / "client.pem").read_bytes(),
                           private_key=(pki / "client.key").read_bytes())
    return make_server(extra_args=tuple(args), client_args=client_args)


def roundtrip(server) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("tls.t", schema)
    server.put("tls.t", [pa.record_batch([pa.array(range(10), pa.int64())], schema=schema)])
    assert server.read_all("tls.t").column("id").to_pylist() == list(range(10))


def test_tls_serves_pyarrow_and_refuses_plaintext(make_server, pki):
    server = tls_server(make_server, pki)
    assert server.location.startswith("grpc+tls://")
    roundtrip(server)
    plain = fl.FlightClient(f"grpc://127.0.0.1:{server.port}")
    with pytest.raises(pa.ArrowException):
        list(plain.list_actions(options=fl.FlightCallOptions(timeout=2.0)))
    untrusting = fl.FlightClient(server.location)  # no root certificate: the CA is unknown
    with pytest.raises(pa.ArrowException):
        list(untrusting.list_actions(options=fl.FlightCallOptions(timeout=2.0)))


def test_mutual_tls_needs_a_client_certificate(make_server, pki):
    server = tls_server(make_server, pki, mutual=True)
    roundtrip(server)
    anonymous = fl.FlightClient(server.location, tls_root_certs=(pki / "ca.pem").read_bytes())
    with pytest.raises(pa.ArrowException):
        list(anonymous.list_actions(options=fl.FlightCallOptions(timeout=2.0)))


def test_bad_tls_flags_are_refused(oxbowd_bin, tmp_path, pki):
    def refused(*args):
        return refused_start(oxbowd_bin, tmp_path / "d", *args)
    assert "both --tls-cert and --tls-key" in refused("--tls-cert", str(pki / "server.pem"))
    assert "nope.pem" in refused("--tls-cert", str(tmp_path / "nope.pem"), "--tls-key",
                                 str(pki / "server.key"))
    refused("--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "client.key"))


def test_cli_over_tls_with_a_login(make_server, pki, tmp_path):
    """The oxbow CLI against a server with TLS and --auth: --tls-ca, --user and OXBOW_PASSWORD."""
    from oxbowtest.auth import oxbow, users_dir

    data = users_dir(tmp_path / "secured", {"root": "*=admin", "reader": "cli.*=read"})
    server = make_server(data_dir=data, extra_args=(
        "--auth", "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")),
        client_args={"tls_root_certs": (pki / "ca.pem").read_bytes()})
    address = ("--server", f"grpc+tls://127.0.0.1:{server.port}", "--tls-ca", str(pki / "ca.pem"))

    def cli(*args, user="root", password=None, stdin=None, tls=address):
        env = {"OXBOW_PASSWORD": password or f"pw-{user}-123"}
        return oxbow(*args, *tls, *(("--user", user) if user else ()), stdin=stdin, env=env)

    created = cli("table", "create", "cli.t", "--schema", "id int64 not null, name string")
    assert created.returncode == 0, created.stderr
    produced = cli("produce", "cli.t", "-", "--format", "csv", stdin="id,name\n1,a\n2,b\n")
    assert produced.returncode == 0, produced.stderr
    consumed = cli("consume", "cli.t", "--format", "jsonl", user="reader")
    assert consumed.returncode == 0, consumed.stderr
    assert [json.loads(line) for line in consumed.stdout.splitlines()] == [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    listed = cli("table", "list", user="reader")
    assert listed.returncode == 0 and "cli.t" in listed.stdout, listed.stderr
    denied = cli("produce", "cli.t", "-", "--format", "csv", user="reader", stdin="id,name\n3,c\n")
    assert denied.returncode != 0 and "may not write" in denied.stderr, denied.stderr
    anonymous = cli("table", "list", user=None)
    assert anonymous.returncode != 0 and "requires authentication" in anonymous.stderr
    wrong = cli("table", "list", password="not-the-password")
    assert wrong.returncode != 0 and "wrong user name or password" in wrong.stderr
    untrusted = cli("table", "list", tls=("--server", f"grpc+tls://127.0.0.1:{server.port}"))
    assert untrusted.returncode != 0
    plaintext = cli("table", "list", tls=("--server", f"127.0.0.1:{server.port}"))
    assert plaintext.returncode != 0


def test_metrics_over_https(make_server, pki):
    import ssl
    import urllib.request

    server = make_server(extra_args=("--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"),
                                     "--metrics-tls"),
                         client_args={"tls_root_certs": (pki / "ca.pem").read_bytes()})
    url = server.metrics_url.replace("http://", "https://")
    trusting = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    with urllib.request.urlopen(url + "/readyz", context=trusting, timeout=10) as response:
        assert response.status == 200
    with urllib.request.urlopen(url + "/metrics", context=trusting, timeout=10) as response:
        assert b"oxbow_process_open_fds" in response.read()
    with pytest.raises(OSError):  # a client that does not know the CA
        urllib.request.urlopen(url + "/healthz", context=ssl.create_default_context(), timeout=10)
    with pytest.raises(OSError):  # plain HTTP on the HTTPS port
        urllib.request.urlopen(server.metrics_url + "/healthz", timeout=10)
