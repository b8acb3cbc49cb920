"""Shared fixtures: the `oxbow` CLI binary under test, and one Spark session per pytest session.

The binary is $OXBOW_BUILD_DIR/tools/oxbow (default: <repo>/build/release/tools/oxbow). Spark
(spark_session.py) serves tests/rest and tests/lake.
"""

import os
import pathlib
import subprocess

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def oxbow_build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))


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
    binary = oxbow_build_dir() / "tools" / "oxbow"
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
