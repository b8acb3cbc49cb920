"""Apache Spark as an independent Iceberg reader: pyspark from PyPI (tests/requirements.txt) and
the Iceberg Spark runtime jar and Iceberg's AWS bundle (the AWS SDK v2 that Iceberg's S3FileIO
needs, for the lake on S3) from Maven Central, fetched once into build/spark (like build/kafka
for the Kafka benchmark).

One local Spark session serves the whole pytest session (the `spark` fixtures of
tests/oxbowtest/fixtures.py; bounded CI mode: local[1], one shuffle partition, no UI): tests/rest gives
each oxbowd a catalog of its own in it (register_catalog), tests/lake loads metadata.json files
by path. OXBOW_SKIP_SPARK=1 skips Spark, and nothing else does: a missing pyspark, mvn or jar
fails the tests.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SPARK_DIR = REPO_ROOT / "build" / "spark"
ICEBERG_VERSION = "1.10.1"
# Maven artifacts (group, artifact): the runtime, and the AWS bundle for S3FileIO.
ARTIFACTS = [("org.apache.iceberg", "iceberg-spark-runtime-3.5_2.12"),
             ("org.apache.iceberg", "iceberg-aws-bundle")]
SKIP_VARIABLE = "OXBOW_SKIP_SPARK"


def spark_jars() -> list[pathlib.Path]:
    """The jars of ARTIFACTS, fetched by Maven into build/spark on first use."""
    jars = []
    for group, artifact in ARTIFACTS:
        jar = SPARK_DIR / f"{artifact}-{ICEBERG_VERSION}.jar"
        jars.append(jar)
        if jar.is_file():
            continue
        if shutil.which("mvn") is None:
            raise RuntimeError("mvn not found: run scripts/setup.sh (Debian package maven)")
        SPARK_DIR.mkdir(parents=True, exist_ok=True)
        coordinates = f"{group}:{artifact}:{ICEBERG_VERSION}"
        proc = subprocess.run(
            ["mvn", "-q", "-B", f"-Dmaven.repo.local={SPARK_DIR / 'm2'}", "dependency:copy",
             f"-Dartifact={coordinates}", f"-DoutputDirectory={SPARK_DIR}"],
            cwd=SPARK_DIR, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not jar.is_file():
            raise RuntimeError(f"mvn could not fetch {coordinates} ({proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return jars


def start_spark():
    """A local Spark session with Iceberg's SQL extensions, the runtime jar and the AWS bundle."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", str(pathlib.Path(os.sys.executable)))
    # The JVM inherits this: the AWS SDK never asks the EC2 metadata address (off loopback) for
    # a region or credentials; readers of the S3 lake get both from their catalog's properties.
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    return (SparkSession.builder.master("local[1]").appName("oxbow-tests")
            .config("spark.jars", ",".join(str(jar) for jar in spark_jars()))
            .config("spark.sql.extensions",
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.driver.memory", "1g")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate())


def register_catalog(spark, catalog_port: int, token: str | None = None) -> str:
    """Names a type=rest Iceberg catalog over the oxbowd whose REST catalog is on catalog_port."""
    name = f"oxbow{catalog_port}"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", f"http://127.0.0.1:{catalog_port}")
    if token is not None:
        spark.conf.set(f"{prefix}.token", token)
    return name


if __name__ == "__main__":  # scripts/setup.sh: fetch the jars ahead of the tests
    print(*spark_jars(), sep="\n")
