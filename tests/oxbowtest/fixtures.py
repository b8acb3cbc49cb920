"""The fixtures of every suite under tests/, registered once by tests/conftest.py: the `oxbow`
CLI, real `oxbowd` servers (plain, per module, tiering into a lake), unique table names, the
`crash` marker, the pytest session's one Spark session and its one real Kafka broker.

The binaries are $OXBOW_BUILD_DIR/tools/oxbow and tools/oxbowd (default:
<repo>/build/release/tools). A missing binary fails the suite; nothing is skipped.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from oxbowtest.auth import make_pki, make_rogue
from oxbowtest.server import OxbowServer, build_dir, oxbowd_binary


class OxbowCli:
    """Runs `oxbow` subcommands; a process killed by a signal always fails the test."""

    def __init__(self, binary: pathlib.Path):
        self.binary = binary

    def run(self, *args, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [str(self.binary), *map(str, args)],
            input=input,
            capture_output=True,
            timeout=timeout,
        )
        assert proc.returncode >= 0, (
            f"oxbow {' '.join(map(str, args))} was killed by signal {-proc.returncode}\n"
            f"stderr: {proc.stderr.decode(errors='replace')}"
        )
        return proc

    def ok(self, *args, input: bytes | None = None) -> subprocess.CompletedProcess:
        """Runs and asserts exit code 0."""
        proc = self.run(*args, input=input)
        assert proc.returncode == 0, (
            f"oxbow {' '.join(map(str, args))} exited {proc.returncode}\n"
            f"stderr: {proc.stderr.decode(errors='replace')}"
        )
        return proc

    def fails(self, *args, input: bytes | None = None, code: int = 1) -> str:
        """Runs, asserts exit code `code`, and returns stderr."""
        proc = self.run(*args, input=input)
        stderr = proc.stderr.decode(errors="replace")
        assert proc.returncode == code, (
            f"oxbow {' '.join(map(str, args))} exited {proc.returncode}, expected {code}\n"
            f"stderr: {stderr}"
        )
        return stderr


@pytest.fixture(scope="session")
def oxbow_bin() -> pathlib.Path:
    binary = build_dir() / "tools" / "oxbow"
    if not binary.is_file():
        pytest.fail(f"oxbow binary not found at {binary}: build it or set OXBOW_BUILD_DIR")
    return binary


@pytest.fixture(scope="session")
def oxbow(oxbow_bin) -> OxbowCli:
    return OxbowCli(oxbow_bin)


@pytest.fixture(scope="session")
def spark_or_none():
    """The pytest session's one Spark session, started on first use; None under
    OXBOW_SKIP_SPARK=1 (and only then: a missing pyspark, mvn or jar fails)."""
    import spark_session

    if os.environ.get(spark_session.SKIP_VARIABLE) == "1":
        yield None
        return
    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.fail("pyspark is not installed: run scripts/setup.sh (tests/requirements.txt)")
    session = spark_session.start_spark()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark(spark_or_none):
    """The Spark session for tests that need nothing else; skipped under OXBOW_SKIP_SPARK=1."""
    if spark_or_none is None:
        pytest.skip("OXBOW_SKIP_SPARK=1")
    return spark_or_none


def pytest_configure(config):
    config.addinivalue_line("markers", "crash: SIGKILL crash-recovery loops (slow; -m 'not crash')")


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


class RealKafka:
    """A real Kafka 4.4 broker (bench/vs_kafka's KafkaBroker), for tests that run the same code
    against it and against Oxbow: it answers to oxbowtest.kafka.bootstrap() as a server does."""

    def __init__(self, broker):
        self.broker = broker
        self.kafka_port = broker.port


@pytest.fixture(scope="session")
def real_kafka(tmp_path_factory) -> RealKafka:
    """One KRaft broker per test session, started on first use (about 10 s) and stopped at the
    session's end."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
    from vs_kafka import KafkaBroker, fetch_kafka

    base = tmp_path_factory.mktemp("kafka")
    for sub in ("data", "config", "logs"):
        (base / sub).mkdir()
    broker = KafkaBroker(fetch_kafka(), base / "data", base / "config", base / "logs")
    yield RealKafka(broker)
    broker.stop()


@pytest.fixture(scope="module", params=["oxbow", "kafka"])
def oxbow_or_kafka(request):
    """The module's oxbowd, then the session's real Kafka broker: a test taking it runs its
    assertions against both."""
    if request.param == "kafka":
        return request.getfixturevalue("real_kafka")
    return request.getfixturevalue("module_server")


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


@pytest.fixture
def warehouse(tmp_path) -> pathlib.Path:
    return tmp_path / "warehouse"


@pytest.fixture
def make_lake_server(make_server, warehouse):
    """Factory: make_lake_server(*extra_args, data_dir=None, freshness_ms=100) -> oxbowd tiering
    into `warehouse` (tmp/warehouse), every 100 ms unless told otherwise, so tests wait little."""

    def make(*extra_args, data_dir=None, freshness_ms=100):
        args = ("--warehouse", str(warehouse), "--lake-freshness-ms", str(freshness_ms),
                *extra_args)
        return make_server(extra_args=args, data_dir=data_dir)

    return make


@pytest.fixture
def lake_server(make_lake_server):
    return make_lake_server()


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> pathlib.Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it."""
    return make_pki(tmp_path_factory)


@pytest.fixture(scope="module")
def rogue(tmp_path_factory) -> pathlib.Path:
    """A client certificate signed by a CA the server does not trust."""
    return make_rogue(tmp_path_factory)
