"""The lake on a cluster (docs/cluster.md#the-lake, issue 37 item 3): three real oxbowd processes
on a real ZooKeeper, sharing one warehouse. The leader of bucket 0 tiers the table and swaps its
lake pointer in ZooKeeper; SIGKILLs and pauses of that owner under writers neither lose nor
repeat a row in Iceberg; every server's REST catalog and union read answer, and pyiceberg, DuckDB
and Spark read what they name.

OXBOW_CLUSTER_LAKE_FAULTS sets how many faults the owner suffers (default 4: kills and pauses in
turn)."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.cluster import SESSION_TIMEOUT_MS, Cluster, Writer, wait_for
from oxbowtest.flight import action
from oxbowtest.lake import assert_unique_offsets, lake_rows
from oxbowtest.readers import duckdb_rows
from oxbowtest.rest_data import rest_catalog
from spark_session import register_catalog

FAULTS = int(os.environ.get("OXBOW_CLUSTER_LAKE_FAULTS", "4"))
TABLE = "lk.events"
BUCKETS = 3


@pytest.fixture
def cluster(oxbowd_bin, zookeeper, tmp_path, request):
    c = Cluster(oxbowd_bin, zookeeper.chroot(request.node.name[:40]), tmp_path, catalog=True,
                extra_args=("--warehouse", str(tmp_path / "warehouse"),
                            "--lake-freshness-ms", "200")).start()
    yield c
    c.stop()


def lake_of(c: Cluster, server: int) -> dict:
    return action(c.client(server), "describe_table", {"table": TABLE})["lake"]


def new_owner(c: Cluster, old: int) -> int:
    def elected():
        leader = c.leader_of(TABLE, 0)
        return leader if leader != old else None
    return wait_for(elected, 30, what=f"a leader of {TABLE}[0] other than server {old}")


def committed_since(c: Cluster, server: int, location: str) -> str:
    """Waits until `server` (the owner) committed a snapshot after `location`."""
    def moved():
        now = lake_of(c, server)["metadata_location"]
        return now if now and now != location else None
    return wait_for(moved, 30, what=f"a commit by server {server}")


def test_one_owner_tiers_exactly_once_across_its_kills_and_pauses(cluster, spark_or_none):
    with pytest.raises(pa.ArrowNotImplementedError, match="primary-key tables in the lake"):
        action(cluster.client(1), "create_table", {
            "table": "lk.keyed", "primary_key": ["id"], "properties": {"lake.enabled": "true"},
            "schema": {"fields": [{"name": "id", "type": "int64", "nullable": False}]}})
    cluster.create_table(TABLE, buckets=BUCKETS, **{"lake.enabled": "true"})
    writers = [Writer(cluster, TABLE, f"w{i}", first_id=i * 10_000_000) for i in range(2)]
    for w in writers:
        w.start()
    location = ""
    for fault in range(FAULTS):
        owner = cluster.leader_of(TABLE, 0)
        location = committed_since(cluster, owner, location)
        if fault % 2 == 0:
            # Rounds start every 50 ms and commit a few times a second: a kill lands in one.
            cluster.kill(owner)
            successor = new_owner(cluster, owner)
            location = committed_since(cluster, successor, location)
            cluster.restart(owner)
        else:
            # Stopped past its session: a new owner commits while the old one is mid-round;
            # once it runs again, its commit must be refused.
            cluster.pause(owner)
            successor = new_owner(cluster, owner)
            location = committed_since(cluster, successor, location)
            cluster.resume(owner)
        time.sleep(SESSION_TIMEOUT_MS / 1000)
    for w in writers:
        w.stop()
    assert sum(len(w.acked) for w in writers) > 0

    # Every bucket settles, and the lake catches up with it.
    log = {b: cluster.read_bucket(TABLE, b) for b in range(BUCKETS)}
    ends = [len(log[b]) for b in range(BUCKETS)]

    def caught_up(server):
        lake = lake_of(cluster, server)
        return lake if lake["tiered_offsets"] == ends and not lake.get("error") else None
    owner = cluster.leader_of(TABLE, 0)
    try:
        lake = wait_for(lambda: caught_up(owner), 60, what=f"the lake at the log's ends {ends}")
    except AssertionError as e:
        raise AssertionError(f"{e}; server {owner} describes {lake_of(cluster, owner)}") from None

    # The lake is the table: each (bucket, offset) once, with the log's row.
    rows = lake_rows(lake["metadata_location"])
    assert_unique_offsets(rows)
    in_lake = set(zip(rows["__bucket"].to_pylist(), rows["__offset"].to_pylist(),
                      rows["id"].to_pylist()))
    in_log = {(b, offset, i) for b in range(BUCKETS) for offset, i in log[b]}
    assert in_lake == in_log, (len(in_lake - in_log), len(in_log - in_lake))
    ids = [i for _, _, i in in_log]
    assert len(ids) == len(set(ids)), "a row was written twice"
    present = set(ids)
    for w in writers:
        lost = [i for i in w.acked if i not in present]
        assert not lost, f"{len(lost)} acknowledged rows of {w.name_} lost, e.g. {lost[:5]}"

    # Every server follows the same lake, its union read is the table, and its REST catalog
    # names the same metadata.
    expected_ids = sorted(ids)
    for server in cluster.live():
        followed = wait_for(lambda: caught_up(server), 30, what=f"server {server} following")
        assert followed["metadata_location"] == lake["metadata_location"]
        ticket = fl.Ticket(json.dumps({"table": TABLE, "union": True}).encode())
        union = cluster.client(server).do_get(ticket).read_all()
        assert sorted(union["id"].to_pylist()) == expected_ids
        loaded = rest_catalog(cluster.servers[server]).load_table(TABLE)
        assert loaded.metadata_location == lake["metadata_location"]
        assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == expected_ids
    assert sorted(duckdb_rows(lake["metadata_location"])["id"].to_pylist()) == expected_ids
    if spark_or_none is not None:
        catalog = register_catalog(spark_or_none, cluster.servers[cluster.live()[-1]].catalog_port)
        counted = spark_or_none.sql(f"SELECT count(*), sum(id) FROM {catalog}.{TABLE}").collect()
        assert tuple(counted[0]) == (len(expected_ids), sum(expected_ids))


def test_alter_table_reaches_the_lake_through_every_server(cluster):
    cluster.create_table(TABLE, buckets=BUCKETS, **{"lake.enabled": "true"})
    writer = Writer(cluster, TABLE, "before", first_id=0)
    writer.start()
    time.sleep(1.0)
    writer.stop()
    owner = cluster.leader_of(TABLE, 0)
    other = owner % 3 + 1
    action(cluster.client(other), "alter_table", {
        "table": TABLE, "changes": [{"op": "add_column", "name": "note", "type": "string"}]})
    batch = pa.record_batch([pa.array([-1, -2], pa.int64()), pa.array(["after", "after"]),
                             pa.array(["n1", "n2"])], names=["id", "writer", "note"])
    client = cluster.client(owner)
    put, acks = client.do_put(fl.FlightDescriptor.for_path(TABLE), batch.schema)
    put.write_batch(batch)
    put.done_writing()
    acks.read()
    put.close()
    total = len(writer.acked) + 2

    def tiered():
        lake = lake_of(cluster, owner)
        if not lake["metadata_location"]:
            return None
        rows = lake_rows(lake["metadata_location"])
        return rows if rows.num_rows == total and "note" in rows.column_names else None
    rows = wait_for(tiered, 60, what="the new column and both rows in the lake")
    notes = dict(zip(rows["id"].to_pylist(), rows["note"].to_pylist()))
    assert notes[-1] == "n1" and notes[-2] == "n2"
    assert all(notes[i] is None for i in writer.acked)
