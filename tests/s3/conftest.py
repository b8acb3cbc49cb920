"""Fixtures of the S3 suite: one real S3 server (signatures checked) per pytest run, moto_server
or, with OXBOW_S3_SERVER=versitygw, the Versity S3 Gateway (tests/oxbowtest/s3_server.py), and oxbowd
with its warehouse in that server's bucket."""

from __future__ import annotations

import itertools
import pathlib

import pytest

from oxbowtest import s3_server
from oxbowtest.server import build_dir

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> s3_server.S3Server:
    """The S3 server of this pytest run."""
    log = tmp_path_factory.mktemp("s3") / f"{s3_server.chosen_kind()}.log"
    server = s3_server.start(log)
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3, monkeypatch) -> s3_server.S3Server:
    """The server's endpoint, region and key in this process's environment, which every oxbowd
    and s3_tool the test starts inherits."""
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3


@pytest.fixture
def s3_prefix(request) -> str:
    """A key prefix of its own for the test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"t{next(_prefixes)}-{base}"


@pytest.fixture(scope="session")
def s3_tool() -> pathlib.Path:
    binary = build_dir() / "src" / "oxbow" / "storage" / "s3_tool"
    if not binary.is_file():
        pytest.fail(f"s3_tool not found at {binary}: build the `s3_tool` target")
    return binary
