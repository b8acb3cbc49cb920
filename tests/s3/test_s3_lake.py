"""The lake on S3: `--warehouse s3://bucket/prefix` puts every Iceberg data, manifest and metadata
file in the bucket of a real S3 server, while each table's current-metadata pointer stays in the
data dir. pyiceberg (its own S3 FileIO, with the server's endpoint and key), DuckDB (iceberg_scan
with httpfs) and Spark (Iceberg's S3FileIO through the REST catalog) read what was written; the
REST catalog hands readers the endpoint but never a secret."""

from __future__ import annotations

import datetime
import decimal
import json
import time
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable

from oxbowtest.batches import NAMED_SCHEMA as SCHEMA, named_batch as batch
from oxbowtest.lake import assert_same_columns, expected_lake, read_log, wait_lake
from oxbowtest.server import refused_start
from oxbowtest.readers import check_reader, duckdb_rows, duckdb_use_s3, spark_frame_rows
from spark_session import register_catalog

def s3_lake_rows(s3, metadata_location: str) -> pa.Table:
    table = StaticTable.from_metadata(metadata_location, properties=s3.pyiceberg_properties())
    return table.scan().to_arrow().sort_by([("__bucket", "ascending"), ("__offset", "ascending")])


def keys_under(s3, prefix: str) -> list[str]:
    keys, token = [], None
    client = s3.client()
    while True:
        kwargs = {"Bucket": s3.bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = client.list_objects_v2(**kwargs)
        keys += [o["Key"] for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return keys
        token = page["NextContinuationToken"]


@pytest.fixture
def s3_lake(s3_env, s3_prefix, make_server, tmp_path):
    """Factory: an oxbowd whose warehouse is s3://<bucket>/<prefix>/warehouse."""
    warehouse = f"s3://{s3_env.bucket}/{s3_prefix}/warehouse"

    def make(*extra, data_dir=None):
        return make_server(extra_args=("--warehouse", warehouse, "--lake-freshness-ms", "100",
                                       *extra), data_dir=data_dir)

    make.warehouse = warehouse
    make.prefix = f"{s3_prefix}/warehouse"
    return make


def tiered(s3_lake, table_name: str, rows: int):
    """A server of `s3_lake` with `rows` rows in `table_name`, all in the lake."""
    server = s3_lake()
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, rows)])
    wait_lake(server, table_name)
    return server


def test_lake_files_live_in_the_bucket_and_pyiceberg_reads_them(s3_env, s3_lake, table_name,
                                                                 tmp_path):
    server = s3_lake()
    server.create_table(table_name, SCHEMA, buckets=2)
    server.put(table_name, [batch(0, 300)])
    server.put(table_name, [batch(300, 200)])
    lake = wait_lake(server, table_name)
    ns, name = table_name.split(".", 1)
    table_prefix = f"{s3_lake.prefix}/{ns}/{name}"
    assert lake["metadata_location"].startswith(f"s3://{s3_env.bucket}/{table_prefix}/metadata/")

    keys = keys_under(s3_env, table_prefix + "/")
    assert any(k.endswith(".parquet") and "/data/" in k for k in keys), keys
    assert any(k.endswith(".avro") and "/metadata/" in k for k in keys), keys
    assert any(k.endswith(".metadata.json") for k in keys), keys
    # Nothing of the lake on local disk but the pointer.
    local = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".parquet", ".avro")]
    assert local == [], local
    pointer = json.loads((server.data_dir / "lake-catalog" / f"{table_name}.json").read_text())
    assert pointer["location"] == lake["metadata_location"]

    rows = s3_lake_rows(s3_env, lake["metadata_location"])
    assert rows.num_rows == 500
    assert_same_columns(rows, expected_lake(read_log(server, table_name)))

    # A restart finds the lake through the pointer and goes on committing to it.
    server.restart()
    server.put(table_name, [batch(500, 50)])
    after = wait_lake(server, table_name)
    assert after["metadata_location"] != lake["metadata_location"]
    rows = s3_lake_rows(s3_env, after["metadata_location"])
    assert rows.num_rows == 550
    assert_same_columns(rows, expected_lake(read_log(server, table_name)))


def test_rest_catalog_gives_readers_the_endpoint_but_no_secret(s3_env, s3_lake, table_name):
    server = tiered(s3_lake, table_name, 40)
    ns, name = table_name.split(".", 1)
    base = f"http://127.0.0.1:{server.catalog_port}"
    with urllib.request.urlopen(f"{base}/v1/namespaces/{ns}/tables/{name}", timeout=10) as r:
        answer = json.loads(r.read())
    config = answer["config"]
    assert config["s3.endpoint"] == s3_env.endpoint
    assert config["s3.region"] == config["client.region"] == s3_env.region
    assert config["io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert config["s3.path-style-access"] == "true"
    text = json.dumps(answer)
    assert s3_env.secret_access_key not in text and s3_env.access_key_id not in text

    # A reader brings its own key; the endpoint comes from the catalog.
    catalog = RestCatalog("oxbow", uri=base, **{
        "s3.access-key-id": s3_env.access_key_id,
        "s3.secret-access-key": s3_env.secret_access_key})
    rows = catalog.load_table(f"{ns}.{name}").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(40))


TYPED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                   pa.field("ok", pa.bool_()), pa.field("day", pa.date32()),
                   pa.field("at", pa.timestamp("us", tz="UTC")),
                   pa.field("price", pa.decimal128(12, 2)), pa.field("v", pa.float64())])


def typed_rows(first: int, count: int) -> list[dict]:
    """The model: every third row has nulls in the nullable columns."""

    def row(i):
        if i % 3 == 2:
            return {"id": i, "name": None, "ok": None, "day": None, "at": None, "price": None,
                    "v": None}
        return {"id": i, "name": f"n\u00e9{i}", "ok": i % 2 == 0,
                "day": datetime.date(1970, 1, 1) + datetime.timedelta(days=i * 37 - 5000),
                "at": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
                + datetime.timedelta(microseconds=i * 1_000_003),
                "price": decimal.Decimal(i * 1013 - 40000).scaleb(-2), "v": i / 8 - 3}

    return [row(i) for i in range(first, first + count)]


def test_duckdb_and_spark_read_the_s3_lake(s3_env, s3_lake, table_name, spark_or_none):
    """The lake on S3 read by DuckDB's iceberg_scan of the s3:// metadata (httpfs with an S3
    secret) and by Spark through the REST catalog (its loadTable config: S3FileIO, the endpoint,
    path style and region; the key is the reader's own): exactly the model's rows, after two
    commits (several manifests and data files)."""
    server = s3_lake()
    server.create_table(table_name, TYPED, buckets=2)
    model = typed_rows(0, 120)
    server.put(table_name, [pa.RecordBatch.from_pylist(model[:70], schema=TYPED)])
    wait_lake(server, table_name)
    server.put(table_name, [pa.RecordBatch.from_pylist(model[70:], schema=TYPED)])
    location = wait_lake(server, table_name)["metadata_location"]
    assert location.startswith("s3://")

    # The log holds the model (each id once); the lake must hold the log, row for row.
    expected = expected_lake(read_log(server, table_name))
    by_id = expected.select(list(TYPED.names)).sort_by("id").cast(TYPED)
    assert by_id.equals(pa.Table.from_pylist(model, schema=TYPED)), "the log is not the model"
    lake = StaticTable.from_metadata(location, properties=s3_env.pyiceberg_properties())
    assert len(lake.snapshots()) >= 2
    schema = lake.schema()

    duckdb_use_s3(s3_env.bucket, s3_env.endpoint, s3_env.region, s3_env.access_key_id,
                  s3_env.secret_access_key)
    check_reader("duckdb", duckdb_rows(location), schema, expected)

    if spark_or_none is None:
        return
    catalog = register_catalog(spark_or_none, server.catalog_port)
    prefix = f"spark.sql.catalog.{catalog}"
    spark_or_none.conf.set(f"{prefix}.s3.access-key-id", s3_env.access_key_id)
    spark_or_none.conf.set(f"{prefix}.s3.secret-access-key", s3_env.secret_access_key)
    frame = spark_or_none.table(f"{catalog}.{table_name}")
    check_reader("spark", spark_frame_rows(frame), schema, expected)


def test_drop_removes_the_tables_objects(s3_env, s3_lake, table_name):
    server = tiered(s3_lake, table_name, 10)
    ns, name = table_name.split(".", 1)
    table_prefix = f"{s3_lake.prefix}/{ns}/{name}/"
    assert keys_under(s3_env, table_prefix)
    server.action("drop_table", {"table": table_name})
    assert keys_under(s3_env, table_prefix) == []
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(100, 5)])
    lake = wait_lake(server, table_name)
    rows = s3_lake_rows(s3_env, lake["metadata_location"])
    assert rows.column("id").to_pylist() == list(range(100, 105))


def test_oxbowd_refuses_to_start_with_wrong_credentials(s3_env, s3_lake, oxbowd_bin, tmp_path,
                                                       monkeypatch):
    bad_secret = "not-the-secret-" + "y" * 16
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", bad_secret)
    out = refused_start(oxbowd_bin, tmp_path / "data", "--warehouse", s3_lake.warehouse, timeout=60)
    assert "SignatureDoesNotMatch" in out and "credentials" in out, out
    assert bad_secret not in out and s3_env.secret_access_key not in out
