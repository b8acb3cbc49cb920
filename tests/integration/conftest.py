"""Fixtures for the oxbowd integration suite: a real `oxbowd` process driven by pyarrow.flight only.

The binary is $OXBOW_BUILD_DIR/tools/oxbowd (default: <repo>/build/release/tools/oxbowd). A missing
binary fails the suite; nothing is skipped.
"""

from __future__ import annotations

import pathlib

import pytest

from oxbowd_harness import OxbowServer, oxbowd_binary


def pytest_configure(config):
    config.addinivalue_line("markers", "crash: SIGKILL crash-recovery loops (slow; -m 'not crash')")


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def oxbowd_bin() -> pathlib.Path:
    binary = oxbowd_binary()
    if not binary.is_file():
        pytest.fail(f"oxbowd binary not found at {binary}: build the `oxbowd` target "
                    f"or set OXBOW_BUILD_DIR to a build dir that has tools/oxbowd")
    return binary


@pytest.fixture
def make_server(oxbowd_bin, tmp_path):
    """Factory: make_server(extra_args=(...), data_dir=None, max_open_files=None, client_args=None)
    -> started server (client_args: FlightClient arguments, e.g. TLS certificates).

    Every server still running at teardown is stopped with SIGTERM and must exit 0.
    """
    servers: list[OxbowServer] = []

    def make(extra_args=(), data_dir: pathlib.Path | None = None,
             max_open_files: int | None = None, client_args: dict | None = None) -> OxbowServer:
        index = len(servers)
        data = data_dir or tmp_path / f"data{index}"
        server = OxbowServer(oxbowd_bin, data, tmp_path / f"oxbowd{index}.log", extra_args,
                             max_open_files)
        server.client_args = client_args or {}
        servers.append(server)
        return server.start()

    yield make
    failures = []
    for server in servers:
        if server.proc is not None:
            try:
                server.stop()
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "\n".join(failures)


@pytest.fixture
def server(make_server) -> OxbowServer:
    """A fresh oxbowd on a fresh data dir, stopped cleanly (exit 0) at teardown."""
    return make_server()


@pytest.fixture(scope="module")
def module_server(oxbowd_bin, tmp_path_factory) -> OxbowServer:
    """One oxbowd shared by a module's tests (they keep to their own tables), stopped cleanly
    (exit 0) at the module's end."""
    base = tmp_path_factory.mktemp("module")
    server = OxbowServer(oxbowd_bin, base / "data", base / "oxbowd.log").start()
    yield server
    if server.proc is not None:
        assert server.stop() == 0, server.log_tail()


_table_counter = iter(range(1, 1 << 30))


@pytest.fixture
def table_name(request) -> str:
    """A table name unique within the session, derived from the test name."""
    base = "".join(c if c.isalnum() else "_" for c in request.node.name)[:100]
    return f"it.{base}_{next(_table_counter)}"
