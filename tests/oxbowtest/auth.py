"""Users and certificates for the suites that turn authentication or TLS on: `oxbow user add`
(each user's password is pw-<name>-123) and a throwaway PKI made with openssl."""

from __future__ import annotations

import os
import pathlib
import subprocess

from oxbowtest.server import oxbowd_binary


def oxbow(*args, stdin: str | None = None, env: dict | None = None):
    cli = pathlib.Path(oxbowd_binary()).with_name("oxbow")
    return subprocess.run([str(cli), *args], input=stdin, capture_output=True, text=True,
                          timeout=30, env={**os.environ, **(env or {})})


def add_user(data_dir, name, *grants):
    done = oxbow("user", "add", "--data-dir", str(data_dir), name, "--password-stdin",
                 *[a for g in grants for a in ("--grant", g)], stdin=f"pw-{name}-123\n")
    assert done.returncode == 0, done.stderr


def users_dir(path: pathlib.Path, users: dict[str, str]) -> pathlib.Path:
    """Makes the data dir `path` with `users` (name -> grant) in it; returns it."""
    path.mkdir()
    for name, grant in users.items():
        add_user(path, name, grant)
    return path


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(tmp_path_factory) -> pathlib.Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it."""
    d = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=oxbow-test-ca",
            "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", f"{name}.pem", cwd=d)
    return d


def make_rogue(tmp_path_factory) -> pathlib.Path:
    """A client certificate signed by a CA the server does not trust."""
    d = tmp_path_factory.mktemp("rogue")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rogue-ca",
            "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=client", "-keyout", "client.key",
            "-out", "client.csr", cwd=d)
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", "client.pem", cwd=d)
    return d
