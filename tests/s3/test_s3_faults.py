"""Faults between Oxbow and S3: a proxy in front of the real server answers 503 or drops the
connection for chosen requests. Retries ride out transient faults; an upload that keeps failing
is aborted and leaves no object; the lake keeps every acknowledged row through an S3 outage and
references only whole objects."""

from __future__ import annotations

import os
import subprocess
import time

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from fault_proxy import FaultProxy
from oxbowtest.lake import assert_same_columns, expected_lake, read_log, wait_lake
from test_s3_client import payload
from test_s3_lake import SCHEMA, batch, keys_under, s3_lake_rows

MIB = 1 << 20


@pytest.fixture
def proxy(s3_env, monkeypatch):
    p = FaultProxy(s3_env.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL", p.endpoint)
    yield p
    p.close()


def tool(s3_tool, *args, **env):
    return subprocess.run([str(s3_tool), *map(str, args)], capture_output=True, timeout=120,
                          env=dict(os.environ, **env))


def test_retries_ride_out_503_and_dropped_connections(s3_env, proxy, s3_tool, s3_prefix,
                                                      tmp_path):
    data = payload(13 * MIB + 7, seed=11)
    local = tmp_path / "big"
    local.write_bytes(data)
    faults = [proxy.add("POST", "uploads", times=1),                    # CreateMultipartUpload
              proxy.add("PUT", "partNumber=1", times=2),                # 503 twice
              proxy.add("PUT", "partNumber=2", times=1, action="drop"),  # connection dropped
              proxy.add("POST", "uploadId=", times=1)]                  # CompleteMultipartUpload
    key = f"{s3_prefix}/big"
    proc = tool(s3_tool, "put", f"s3://{s3_env.bucket}/{key}", local,
                OXBOW_S3_PART_BYTES=str(5 * MIB))
    assert proc.returncode == 0, proc.stderr.decode()
    assert [f.hits for f in faults] == [1, 2, 1, 1]
    log = proc.stderr.decode()
    assert log.count("retrying") == 5 and "SlowDown" in log, log
    assert s3_env.secret_access_key not in log and "Authorization" not in log
    assert s3_env.client().get_object(Bucket=s3_env.bucket, Key=key)["Body"].read() == data

    small = proxy.add("GET", "", times=2)
    got = tool(s3_tool, "get", f"s3://{s3_env.bucket}/{key}", 100, 50)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == data[100:150] and small.hits == 2


def test_an_upload_that_keeps_failing_is_aborted_and_leaves_nothing(s3_env, proxy, s3_tool,
                                                                    s3_prefix, tmp_path):
    local = tmp_path / "big"
    local.write_bytes(payload(11 * MIB, seed=5))
    proxy.add("PUT", "partNumber=2", times=-1)
    key = f"{s3_prefix}/never"
    proc = tool(s3_tool, "put", f"s3://{s3_env.bucket}/{key}", local,
                OXBOW_S3_PART_BYTES=str(5 * MIB), OXBOW_S3_MAX_ATTEMPTS="3")
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert "gave up after 3 attempts" in err and "SlowDown" in err and "503" in err, err
    boto = s3_env.client()
    assert boto.list_objects_v2(Bucket=s3_env.bucket, Prefix=key).get("KeyCount") == 0
    uploads = boto.list_multipart_uploads(Bucket=s3_env.bucket, Prefix=key)
    assert not uploads.get("Uploads"), f"the failed upload was not aborted: {uploads}"


def test_parts_go_up_several_at_a_time_within_the_bound(s3_env, proxy, s3_tool, s3_prefix,
                                                          tmp_path):
    data = os.urandom(16 * MIB + 5)
    local = tmp_path / "big"
    local.write_bytes(data)
    retried = proxy.add("PUT", "partNumber=2", times=1)  # retried while other parts are out
    key = f"{s3_prefix}/parallel"
    proc = tool(s3_tool, "put", f"s3://{s3_env.bucket}/{key}", local,
                OXBOW_S3_PART_BYTES=str(5 * MIB), OXBOW_S3_PARTS_IN_FLIGHT="2")
    assert proc.returncode == 0, proc.stderr.decode()
    assert retried.hits == 1
    # Parts are cut at 10 and 15 MiB written, the rest goes at Sync: 3 parts, at most 2 at once.
    assert proxy.max_active == 2
    boto = s3_env.client()
    assert boto.head_object(Bucket=s3_env.bucket, Key=key)["ETag"].strip('"').endswith("-3")
    assert boto.get_object(Bucket=s3_env.bucket, Key=key)["Body"].read() == data


def test_lake_keeps_every_acknowledged_row_through_an_s3_outage(s3_env, proxy, s3_prefix,
                                                                 make_server, table_name):
    warehouse = f"s3://{s3_env.bucket}/{s3_prefix}/warehouse"
    server = make_server(extra_args=("--warehouse", warehouse, "--lake-freshness-ms", "100"))
    server.create_table(table_name, SCHEMA, buckets=2)
    server.put(table_name, [batch(0, 100)])
    first = wait_lake(server, table_name)

    # S3 refuses every PUT: puts are still acknowledged (the log is local), tiering fails and
    # says so, and the lake stays at its last whole commit.
    outage = proxy.add("PUT", "", times=-1)
    acked = 0
    for i in range(5):
        server.put(table_name, [batch(100 + 20 * i, 20)])
        acked += 20
    deadline = time.monotonic() + 60
    while "error" not in server.describe(table_name)["lake"]:
        assert time.monotonic() < deadline, "tiering reported no error during the outage"
        time.sleep(0.1)
    lake = server.describe(table_name)["lake"]
    assert lake["metadata_location"] == first["metadata_location"]
    assert lake["lag_rows"] == acked
    assert outage.hits > 0
    assert s3_lake_rows(s3_env, first["metadata_location"]).num_rows == 100

    # S3 is back: the lake catches up with exactly the log, every row once.
    outage.times = outage.hits
    after = wait_lake(server, table_name, timeout_s=60)
    rows = s3_lake_rows(s3_env, after["metadata_location"])
    assert rows.num_rows == 100 + acked
    assert_same_columns(rows, expected_lake(read_log(server, table_name)))


def lake_objects(s3, metadata_location: str) -> tuple[str, set[str]]:
    """The key prefix of the lake table's location, and the keys its metadata references: the
    metadata files (current and metadata-log), manifest lists, manifests and data files."""
    table = StaticTable.from_metadata(metadata_location, properties=s3.pyiceberg_properties())
    md = table.metadata
    refs = {metadata_location} | {e.metadata_file for e in md.metadata_log}
    for snapshot in md.snapshots:
        refs.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            refs.add(manifest.manifest_path)
            refs |= {e.data_file.file_path
                     for e in manifest.fetch_manifest_entry(table.io, discard_deleted=False)}
    root = f"s3://{s3.bucket}/"
    return md.location.removeprefix(root) + "/", {r.removeprefix(root) for r in refs}


def test_maintenance_removes_what_failed_commits_left_in_the_bucket(s3_env, proxy, s3_prefix,
                                                                    make_server, table_name):
    """S3 refuses the new metadata files and every DELETE: each round writes its data file and
    manifests, fails to commit and fails to delete them, leaving them unreferenced. Once S3 is back the lake catches up, and the
    next maintenance (every 2 s) deletes those leftovers; the lake keeps every row."""
    warehouse = f"s3://{s3_env.bucket}/{s3_prefix}/warehouse"
    server = make_server(extra_args=("--warehouse", warehouse, "--lake-freshness-ms", "100",
                                     "--lake-maintenance-interval-ms", "2000"))
    server.create_table(table_name, SCHEMA, buckets=1)
    server.put(table_name, [batch(0, 100)])
    first = wait_lake(server, table_name)
    prefix, referenced = lake_objects(s3_env, first["metadata_location"])

    refused = proxy.add("PUT", "metadata.json", times=-1)
    undeletable = proxy.add("DELETE", "", times=-1)  # a round's own clean-up fails too
    server.put(table_name, [batch(100, 50)])
    deadline = time.monotonic() + 30
    while "error" not in server.describe(table_name)["lake"]:
        assert time.monotonic() < deadline, "tiering reported no error during the outage"
        time.sleep(0.1)
    leftovers = set(keys_under(s3_env, prefix)) - referenced
    assert leftovers, "no failed commit left a file: tested nothing"
    assert refused.hits > 0

    refused.times = refused.hits
    undeletable.times = undeletable.hits
    wait_lake(server, table_name, timeout_s=60)
    deadline = time.monotonic() + 30
    while True:  # maintenance may commit too: the current metadata each time
        location = server.describe(table_name)["lake"]["metadata_location"]
        prefix, referenced = lake_objects(s3_env, location)
        unreferenced = set(keys_under(s3_env, prefix)) - referenced - {
            prefix + "metadata/version-hint.text"}
        if not unreferenced:
            break
        assert time.monotonic() < deadline, f"maintenance left {sorted(unreferenced)}"
        time.sleep(0.2)
    # A retried commit may write a manifest under the failed one's name: only the rest had to go.
    removed = leftovers - referenced
    assert any(k.endswith(".parquet") for k in removed), f"nothing to remove: {sorted(leftovers)}"
    assert not removed & set(keys_under(s3_env, prefix))
    rows = s3_lake_rows(s3_env, location)
    assert rows.column("id").to_pylist() == list(range(150))
