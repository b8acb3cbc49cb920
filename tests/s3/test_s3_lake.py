"""The lake on S3: `--warehouse s3://bucket/prefix` puts every Iceberg data, manifest and metadata
file in the bucket of a real S3 server, while each table's current-metadata pointer stays in the
data dir. pyiceberg (its own S3 FileIO, with the server's endpoint and key) reads what was
written; the REST catalog hands readers the endpoint but never a secret."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable

from lake_harness import assert_same_columns, expected_lake, read_log, wait_lake

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("v", pa.float64())])


def batch(first: int, rows: int) -> pa.RecordBatch:
    ids = list(range(first, first + rows))
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"n{i}" for i in ids]),
                            pa.array([i / 4 for i in ids])], schema=SCHEMA)


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
    server = s3_lake()
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, 40)])
    wait_lake(server, table_name)
    ns, name = table_name.split(".", 1)
    base = f"http://127.0.0.1:{server.catalog_port}"
    with urllib.request.urlopen(f"{base}/v1/namespaces/{ns}/tables/{name}", timeout=10) as r:
        answer = json.loads(r.read())
    config = answer["config"]
    assert config["s3.endpoint"] == s3_env.endpoint
    assert config["s3.region"] == s3_env.region
    assert config["s3.path-style-access"] == "true"
    text = json.dumps(answer)
    assert s3_env.secret_access_key not in text and s3_env.access_key_id not in text

    # A reader brings its own key; the endpoint comes from the catalog.
    catalog = RestCatalog("oxbow", uri=base, **{
        "s3.access-key-id": s3_env.access_key_id,
        "s3.secret-access-key": s3_env.secret_access_key})
    rows = catalog.load_table(f"{ns}.{name}").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(40))


def test_drop_removes_the_tables_objects(s3_env, s3_lake, table_name):
    server = s3_lake()
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, 10)])
    wait_lake(server, table_name)
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
    proc = subprocess.run(
        [str(oxbowd_bin), "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0",
         "--metrics-listen", "", "--kafka-listen", "", "--catalog-listen", "",
         "--warehouse", s3_lake.warehouse],
        capture_output=True, timeout=60)
    out = (proc.stdout + proc.stderr).decode()
    assert proc.returncode != 0, out
    assert "SignatureDoesNotMatch" in out and "credentials" in out, out
    assert bad_secret not in out and s3_env.secret_access_key not in out
