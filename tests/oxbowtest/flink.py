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
        "flink-clients", "flink-connector-base", "flink-json",
        "flink-sql-avro-confluent-registry")),
    ("org.apache.flink", "flink-connector-kafka", KAFKA_CONNECTOR_VERSION),
    # Flink logs through slf4j 1.7: its no-op binding keeps the test's output quiet.
    ("org.slf4j", "slf4j-nop", "1.7.36")])


def flink_classpath() -> str:
    return fetch_classpath(f"Flink {FLINK_VERSION}", POM, FLINK_DIR)


def start_sql(statements: str, workdir: pathlib.Path) -> subprocess.Popen:
    """Starts running the statements (each ending with ";" at a line's end) in the background;
    job_output() has what the runner printed once it exited."""
    script = workdir / "statements.sql"
    script.write_text(statements)
    return subprocess.Popen(["java", "-XX:+UseSerialGC", "-Xmx1g", "-cp", flink_classpath(),
                             str(RUNNER), str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def job_output(job: subprocess.Popen) -> str:
    if job.poll() is None:
        job.kill()
    out, err = job.communicate()
    return f"exit {job.returncode}\n{out[-2000:]}\n{err[-5000:]}"


def run_sql(statements: str, workdir: pathlib.Path, timeout: float = 300) -> str:
    """Runs the statements; returns the runner's output."""
    job = start_sql(statements, workdir)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
    assert job.returncode == 0, f"Flink SQL failed ({job.returncode}):\n{err[-5000:]}"
    return out
