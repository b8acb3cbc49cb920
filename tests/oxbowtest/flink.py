"""Apache Flink 2.2 with its Kafka connector, for Flink SQL against oxbowd's Kafka listener
(tests/integration/test_flink.py, docs/flink.md): the jars come from Maven Central on first use
into build/flink, and tests/integration/FlinkSql.java runs a file of SQL statements on Flink's
local mini cluster in one JVM."""

from __future__ import annotations

import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "bench"))
from peers import fetch_classpath, maven_pom  # noqa: E402

FLINK_VERSION = "2.2.0"
KAFKA_CONNECTOR_VERSION = "5.0.0-2.2"
FLINK_DIR = REPO_ROOT / "build" / "flink"
RUNNER = REPO_ROOT / "tests" / "integration" / "FlinkSql.java"


POM = maven_pom("flink-sql", [
    *(("org.apache.flink", artifact, FLINK_VERSION) for artifact in (
        "flink-table-api-java", "flink-table-planner-loader", "flink-table-runtime",
        "flink-clients", "flink-connector-base", "flink-json")),
    ("org.apache.flink", "flink-connector-kafka", KAFKA_CONNECTOR_VERSION),
    # Flink logs through slf4j 1.7: its no-op binding keeps the test's output quiet.
    ("org.slf4j", "slf4j-nop", "1.7.36")])


def flink_classpath() -> str:
    return fetch_classpath(f"Flink {FLINK_VERSION}", POM, FLINK_DIR)


def run_sql(statements: str, workdir: pathlib.Path, timeout: float = 300) -> str:
    """Runs the statements (each ending with ";" at a line's end); returns the runner's output."""
    script = workdir / "statements.sql"
    script.write_text(statements)
    proc = subprocess.run(["java", "-XX:+UseSerialGC", "-Xmx1g", "-cp", flink_classpath(),
                           str(RUNNER), str(script)],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"Flink SQL failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
    return proc.stdout
