"""An embedded oxbowd with an s3:// warehouse whose data dir is lost: `oxbowd
--recover-from-warehouse` rebuilds a new data dir from what the warehouse holds (the catalog's
copy, the cold segments and the copies of their manifests, the KV snapshots, the lake pointers'
copies) and serves the tables again, each bucket's log going on after the last offset the
warehouse holds. docs/operations.md#recovering-a-lost-data-dir."""

from __future__ import annotations

import json
import time

import pyarrow as pa

from oxbowtest.batches import NAMED_SCHEMA as SCHEMA, named_batch
from oxbowtest.cold_log import (PROPERTIES as COLD_PROPERTIES, SERVER_ARGS as COLD_ARGS, batch,
                                bucket, produce, read)
from oxbowtest.lake import wait_lake
from oxbowtest.primary_keys import SCHEMA as PK_SCHEMA, create_pk_table, snapshot, upsert
from oxbowtest.server import refused_start
from test_s3_lake import keys_under, s3_lake, s3_lake_rows  # noqa: F401 (the fixture)

SNAPSHOT_MS = 300


def pk_rows(first: int, count: int, version: int) -> pa.RecordBatch:
    ids = list(range(first, first + count))
    return pa.record_batch([
        pa.array(ids, pa.int32()), pa.array(["t"] * count), pa.array([version * 1000 + i for i in ids]),
        pa.array([f"s{version}" for _ in ids]), pa.array([i % 2 == 0 for i in ids]),
        pa.array([version] * count, pa.int64())], schema=PK_SCHEMA)


def wait_for(predicate, what: str, server, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}\n{server.log_tail()}"
        time.sleep(0.1)


def snapshot_offsets(s3, s3_lake, table_id: int) -> list[int]:
    prefix = f"{s3_lake.prefix}/_kv/{table_id}/0/"
    return sorted(int(k[len(prefix):].split("/")[0].removeprefix("snapshot-"))
                  for k in keys_under(s3, prefix) if k.endswith("/manifest.json"))


def rows_by_id(table: pa.Table) -> dict:
    return {r["id"]: r for r in table.to_pylist()}


def test_a_lost_data_dir_is_rebuilt_from_the_warehouse(s3_env, s3_lake, tmp_path):
    server = s3_lake(*COLD_ARGS, "--kv-snapshot-interval-ms", str(SNAPSHOT_MS))
    # A log table whose sealed segments go cold, with no lake.
    cold_id = server.create_table("rc.cold", SCHEMA, buckets=1,
                                  properties=COLD_PROPERTIES)["table_id"]
    # A log table in the lake.
    server.create_table("rc.lake", SCHEMA, buckets=2)
    # A primary-key table, its rows in KV snapshots.
    pk_id = create_pk_table(server, "rc.keys", buckets=1)["table_id"]

    produce(server, "rc.cold", 0, 12)
    server.put("rc.lake", [named_batch(0, 700)])
    upsert(server, "rc.keys", pk_rows(0, 300, 1))
    upsert(server, "rc.keys", pk_rows(100, 300, 2))
    wait_lake(server, "rc.lake")
    pk_end = bucket(server, "rc.keys")["next_offset"]
    wait_for(lambda: pk_end in snapshot_offsets(s3_env, s3_lake, pk_id),
             f"a KV snapshot at offset {pk_end}", server)
    wait_for(lambda: bucket(server, "rc.cold")["local_segments"] == 1, "segments going cold",
             server)
    cold_rows, _ = read(server, "rc.cold")
    pk_before = rows_by_id(snapshot(server, "rc.keys")[0])
    lake_before = server.describe("rc.lake")["lake"]
    assert len(pk_before) == 400
    catalog_copy = json.loads(s3_env.client().get_object(
        Bucket=s3_env.bucket, Key=f"{s3_lake.prefix}/_catalog/catalog.json")["Body"].read())
    assert {t["table"] for t in catalog_copy["tables"]} == {"rc.cold", "rc.lake", "rc.keys"}

    # Rows past the cold segments are in the lost data dir only: the active segment's.
    produce(server, "rc.cold", 12 * 500, 1)
    server.kill()

    fresh = tmp_path / "rebuilt"
    recovered = s3_lake(*COLD_ARGS, "--kv-snapshot-interval-ms", str(SNAPSHOT_MS),
                        "--recover-from-warehouse", data_dir=fresh)
    log = recovered.log_path.read_text()
    assert "recovery: table 'rc.cold' rebuilt" in log, log
    assert "left out" not in log, log

    # The cold table: exactly the rows of its cold segments, then new ones after them.
    cold_end = bucket(recovered, "rc.cold")["next_offset"]
    assert 0 < cold_end <= cold_rows.num_rows
    got, _ = read(recovered, "rc.cold")
    assert got.column("id").to_pylist() == list(range(cold_end))
    assert got.equals(cold_rows.slice(0, cold_end))
    recovered.put("rc.cold", [batch(cold_end)])
    got, metas = read(recovered, "rc.cold", start=cold_end)
    assert metas[0]["base_offset"] == cold_end
    got, _ = read(recovered, "rc.cold")
    assert got.column("id").to_pylist() == list(range(cold_end + 500))

    # The lake table: its log goes on after the lake, so new rows reach the lake once.
    assert recovered.describe("rc.lake")["lake"]["tiered_offsets"] == lake_before["tiered_offsets"]
    ends = [b["next_offset"] for b in recovered.describe("rc.lake")["bucket_offsets"]]
    assert ends == lake_before["tiered_offsets"]
    recovered.put("rc.lake", [named_batch(700, 300)])
    after = wait_lake(recovered, "rc.lake")
    ids = s3_lake_rows(s3_env, after["metadata_location"]).column("id").to_pylist()
    assert sorted(ids) == list(range(1000))

    # The primary-key table: the rows of its newest snapshot.
    assert bucket(recovered, "rc.keys")["next_offset"] == pk_end
    assert rows_by_id(snapshot(recovered, "rc.keys")[0]) == pk_before
    upsert(recovered, "rc.keys", pk_rows(390, 20, 3))
    after_pk = rows_by_id(snapshot(recovered, "rc.keys")[0])
    assert len(after_pk) == 410 and after_pk[395]["ver"] == 3 and after_pk[50]["ver"] == 1

    # A second recovery into a data dir that holds tables is refused.
    recovered.stop()
    refused = refused_start(recovered.binary, fresh, "--warehouse", s3_lake.warehouse,
                            "--recover-from-warehouse")
    assert "holds a catalog already" in refused


def test_a_primary_key_table_its_lake_outruns_is_left_out(s3_env, s3_lake, tmp_path):
    # No KV snapshots: the lake holds rows the warehouse cannot rebuild the table's rows to.
    server = s3_lake()
    create_pk_table(server, "rc.pklake", buckets=1, properties={"lake.enabled": "true"})
    server.create_table("rc.plain", SCHEMA, buckets=1)
    upsert(server, "rc.pklake", pk_rows(0, 50, 1))
    server.put("rc.plain", [named_batch(0, 40)])
    wait_lake(server, "rc.pklake")
    wait_lake(server, "rc.plain")
    server.kill()

    recovered = s3_lake("--recover-from-warehouse", data_dir=tmp_path / "rebuilt")
    log = recovered.log_path.read_text()
    assert ("recovery: left out table 'rc.pklake' bucket 0: its lake holds offsets up to 50 but "
            "its rows can be rebuilt only up to 0 (no KV snapshot)") in log, log
    tables = [t["table"] for t in recovered.action("list_tables")["tables"]]
    assert "rc.pklake" not in tables and "rc.plain" in tables
    assert [b["next_offset"] for b in recovered.describe("rc.plain")["bucket_offsets"]] == [40]
