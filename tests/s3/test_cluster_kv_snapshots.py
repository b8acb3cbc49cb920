"""A cluster's warehouse in a real S3 server (signatures checked), on three oxbowd processes and a
real ZooKeeper. KV snapshots (docs/cluster.md#kv-snapshots-in-object-storage, issue 37 item 2):
each bucket's leader uploads its rows, and a replica whose disk was wiped restores the latest
snapshot and fetches only the changelog after it. The lake (docs/cluster.md#the-lake, item 3):
its files in the bucket, its pointer in ZooKeeper, a SIGKILL of its owner losing and repeating
nothing, and every server's REST catalog serving it to pyiceberg."""

from __future__ import annotations

import json
import re

import pyarrow.flight as fl
import pytest
from pyiceberg.catalog.rest import RestCatalog

from oxbowtest.cluster import Cluster, Writer, wait_for
from oxbowtest.cluster_pk import (BUCKETS, bucket_rows, create, lead_and_read, put,
                                  rows)
from oxbowtest.flight import action

from test_s3_lake import keys_under


@pytest.fixture
def s3_cluster(s3_env, s3_prefix, oxbowd_bin, zookeeper, tmp_path, request):
    warehouse = f"s3://{s3_env.bucket}/{s3_prefix}/warehouse"
    c = Cluster(oxbowd_bin, zookeeper.chroot(request.node.name[:40]), tmp_path, catalog=True,
                extra_args=("--warehouse", warehouse, "--kv-snapshot-interval-ms", "300",
                            "--lake-freshness-ms", "200"))
    c.prefix = f"{s3_prefix}/warehouse"
    yield c.start()
    c.stop()


def manifests(s3, c: Cluster, table_id: int, bucket: int) -> dict[int, dict]:
    """The bucket's complete snapshots in the bucket of the S3 server, by offset."""
    prefix = f"{c.prefix}/_kv/{table_id}/{bucket}/"
    out = {}
    client = s3.client()
    for key in keys_under(s3, prefix):
        if key.endswith("/manifest.json"):
            try:
                body = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
            except client.exceptions.NoSuchKey:
                continue  # an older snapshot, deleted after a newer one was uploaded
            manifest = json.loads(body)
            out[manifest["offset"]] = manifest
    return out


def test_a_wiped_replica_restores_the_snapshot_and_fetches_only_the_tail(s3_env, s3_cluster):
    c = s3_cluster
    table_id = create(c, "kv.snap")["table_id"]
    ids = list(range(3000))
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        put(c.client(1), "kv.snap", "upsert", rows(part, ["s"] * len(part), part))
    put(c.client(2), "kv.snap", "delete", rows(ids[:300], ["s"] * 300))
    # Each leader uploads its bucket once its rows moved: the manifest names the offset they are at.
    for b in range(BUCKETS):
        end = c.wait_in_sync("kv.snap", b)["log_end"]
        wait_for(lambda: end in manifests(s3_env, c, table_id, b), timeout=30,
                 what=f"a KV snapshot of bucket {b} at offset {end}")
    snapshotted = c.wait_in_sync("kv.snap", 0)["log_end"]
    found = manifests(s3_env, c, table_id, 0)[snapshotted]
    assert found["rows"] > 0 and found["files"], found
    put(c.client(3), "kv.snap", "upsert", rows(ids[300:400], ["s"] * 100, [-1] * 100))
    state = c.wait_in_sync("kv.snap", 0)
    wiped = next(i for i in state["replicas"] if i != state["leader"])
    c.wipe(wiped)
    c.wait_in_sync("kv.snap", 0)
    # Changes after the restore: a tail it fetches as any follower does.
    put(c.client(3), "kv.snap", "upsert", rows(ids[400:500], ["s"] * 100, [-2] * 100))
    c.wait_in_sync("kv.snap", 0)
    before = bucket_rows(c, state["leader"], "kv.snap", 0)
    log = c.servers[wiped].log_path.read_text()
    restored = re.search(r"'kv\.snap' bucket 0: restored from the KV snapshot at offset (\d+) "
                         r"\((s3://[^)]+)\)", log)
    assert restored, log[-3000:]
    # The newest snapshot when it restarted (one may have followed the last put already).
    assert snapshotted <= int(restored.group(1)) <= state["log_end"]
    # Made leader, the wiped server serves the same rows, and its changelog starts at the
    # snapshot.
    assert lead_and_read(c, "kv.snap", 0, wiped) == before
    changelog = c.client(wiped).do_get(
        fl.Ticket(json.dumps({"table": "kv.snap", "bucket": 0}).encode()))
    first = next(iter(changelog))
    assert json.loads(first.app_metadata.to_pybytes())["base_offset"] == int(restored.group(1))


def test_retention_trims_the_changelog_and_a_wiped_replica_still_recovers(
        s3_env, s3_prefix, oxbowd_bin, zookeeper, tmp_path, request):
    """With snapshots, a primary-key changelog is kept from the last snapshot (and checkpoint)
    on, not from offset 0: a replica whose disk was wiped then rebuilds from the snapshot, which
    it could not from the changelog alone."""
    warehouse = f"s3://{s3_env.bucket}/{s3_prefix}/warehouse"
    c = Cluster(oxbowd_bin, zookeeper.chroot(request.node.name[:40]), tmp_path,
                extra_args=("--warehouse", warehouse, "--kv-snapshot-interval-ms", "200",
                            "--kv-checkpoint-interval-ms", "200", "--segment-bytes", "32768",
                            "--retention-bytes", "65536")).start()
    try:
        create(c, "kv.trim")
        keys = list(range(600))
        # The same keys over and over: the changelog grows, the rows do not.
        for round_ in range(40):
            put(c.client(1), "kv.trim", "upsert",
                rows(keys, ["t"] * len(keys), [round_ * 1000 + k for k in keys]))

        def trimmed():
            leader = c.leader_of("kv.trim", 0)
            described = action(c.client(leader), "describe_table", {"table": "kv.trim"})
            return next(b for b in described["bucket_offsets"] if b["bucket"] == 0)[
                "earliest_offset"] > 0
        wait_for(trimmed, timeout=60, what="retention trimming bucket 0's changelog")
        state = c.wait_in_sync("kv.trim", 0)
        before = bucket_rows(c, state["leader"], "kv.trim", 0)
        assert {r["qty"] // 1000 for r in before} == {39}
        wiped = next(i for i in state["replicas"] if i != state["leader"])
        c.wipe(wiped)
        c.wait_in_sync("kv.trim", 0)
        assert "'kv.trim' bucket 0: restored from the KV snapshot" in \
            c.servers[wiped].log_path.read_text()
        assert lead_and_read(c, "kv.trim", 0, wiped) == before
    finally:
        c.stop()


def test_the_lake_lives_in_the_bucket_and_survives_a_kill_of_its_owner(s3_env, s3_cluster):
    c = s3_cluster
    c.create_table("lk.s3", buckets=BUCKETS, **{"lake.enabled": "true"})
    for b in range(BUCKETS):
        c.leader_of("lk.s3", b)  # each leader serves before the writers pick their servers
    writers = [Writer(c, "lk.s3", f"w{k}", first_id=k * 10_000_001) for k in range(3)]
    for w in writers:
        w.start()
    owner = c.leader_of("lk.s3", 0)
    wait_for(lambda: action(c.client(owner), "describe_table", {"table": "lk.s3"})
             ["lake"]["metadata_location"], 30, what="the owner's first commit")
    c.kill(owner)
    successor = wait_for(lambda: (lambda l: l if l != owner else None)(c.leader_of("lk.s3", 0)),
                         30, what="a new owner")
    c.restart(owner)
    for w in writers:
        w.stop()
    log = {b: c.read_bucket("lk.s3", b) for b in range(BUCKETS)}
    ends = [len(log[b]) for b in range(BUCKETS)]

    def caught_up(server):
        lake = action(c.client(server), "describe_table", {"table": "lk.s3"})["lake"]
        return lake if lake["tiered_offsets"] == ends else None
    lake = wait_for(lambda: caught_up(successor), 60, what=f"the lake at the log's ends {ends}")
    assert lake["metadata_location"].startswith(f"s3://{s3_env.bucket}/{c.prefix}/lk/s3/")
    expected = sorted(i for b in range(BUCKETS) for _, i in log[b])
    assert len(expected) == len(set(expected))
    assert {i for w in writers for i in w.acked} <= set(expected)
    for server in c.live():
        wait_for(lambda: caught_up(server), 30, what=f"server {server} following")
        catalog = RestCatalog("oxbow", uri=f"http://127.0.0.1:{c.servers[server].catalog_port}",
                              **{"s3.access-key-id": s3_env.access_key_id,
                                 "s3.secret-access-key": s3_env.secret_access_key})
        loaded = catalog.load_table("lk.s3")
        assert loaded.metadata_location == lake["metadata_location"]
        assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == expected
